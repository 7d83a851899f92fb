#!/usr/bin/env bash
# A private Docker engine for the container tests and for `duplexeval image base`:
#   scripts/docker-engine.sh install   Debian's docker.io, containerd, runc, debootstrap, docker-compose (when missing)
#   scripts/docker-engine.sh start     install, start dockerd on its own socket, wait for `docker info`
#   scripts/docker-engine.sh stop      remove duplexeval containers, stop dockerd by its PID
#   scripts/docker-engine.sh env       print `export DOCKER_HOST=...` for this engine
#
# The engine is the caller's own: its data root, exec root, pid file and socket live under
# $DUPLEXEVAL_ENGINE_DIR (default /var/lib/duplexeval-engine), so it never touches a
# system daemon. Containers run outside the caller's cgroup: they are removed before the
# daemon stops, or they would outlive it.
set -euo pipefail

ENGINE_DIR="${DUPLEXEVAL_ENGINE_DIR:-/var/lib/duplexeval-engine}"
SOCK="$ENGINE_DIR/docker.sock"
PIDFILE="$ENGINE_DIR/dockerd.pid"
LOG="$ENGINE_DIR/dockerd.log"
HOST="unix://$SOCK"
WAIT_S="${DUPLEXEVAL_ENGINE_WAIT_S:-60}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

install_engine() {
  local need=()
  command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
  command -v containerd >/dev/null 2>&1 || need+=(containerd)
  command -v runc >/dev/null 2>&1 || need+=(runc)
  command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
  command -v docker-compose >/dev/null 2>&1 || need+=(docker-compose)
  # iptables: dockerd's default bridge needs it even though model containers have no network.
  command -v iptables >/dev/null 2>&1 || need+=(iptables)
  if [ ${#need[@]} -eq 0 ]; then return 0; fi
  echo "docker-engine: installing Debian packages: ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
}

running() {
  [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null
}

clear_stale_state() {
  # An engine killed with its session (SIGKILL: no clean stop) leaves runtime state behind:
  # containerd's pid file and sockets in the exec root, netns and overlay mounts. Its
  # containerd then never comes up ("timeout waiting for containerd to start"). The exec
  # root is runtime state only, so it is dropped; images and layers in the data root stay.
  local mounts
  mounts=$(awk -v d="$ENGINE_DIR/" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r)
  for m in $mounts; do $SUDO umount -l "$m" 2>/dev/null || true; done
  pkill -9 -f "containerd --config $ENGINE_DIR/exec/" 2>/dev/null || true
  pkill -9 -f "containerd-shim.*$ENGINE_DIR" 2>/dev/null || true
  $SUDO rm -rf "$ENGINE_DIR/exec"
  rm -f "$PIDFILE" "$SOCK"
}

start_engine() {
  install_engine
  if running && DOCKER_HOST="$HOST" docker info >/dev/null 2>&1; then
    echo "docker-engine: already running (pid $(cat "$PIDFILE")); export DOCKER_HOST=$HOST"
    return 0
  fi
  clear_stale_state
  $SUDO mkdir -p "$ENGINE_DIR/data" "$ENGINE_DIR/exec"
  # setsid: the daemon is not in the caller's process group, so a Ctrl-C there does not
  # kill it half-way through removing containers; `stop` ends it by PID.
  $SUDO setsid dockerd --data-root "$ENGINE_DIR/data" --exec-root "$ENGINE_DIR/exec" \
    --pidfile "$PIDFILE" -H "$HOST" >"$LOG" 2>&1 </dev/null &
  local waited=0
  until DOCKER_HOST="$HOST" docker info >/dev/null 2>&1; do
    sleep 1
    waited=$((waited + 1))
    if [ "$waited" -ge "$WAIT_S" ]; then
      echo "docker-engine: dockerd did not answer within ${WAIT_S} s; last lines of $LOG:" >&2
      tail -n 20 "$LOG" >&2 || true
      exit 1
    fi
  done
  echo "docker-engine: running (pid $(cat "$PIDFILE"), ${waited} s); export DOCKER_HOST=$HOST"
}

stop_engine() {
  if ! running; then
    echo "docker-engine: not running"
    return 0
  fi
  local ids
  ids=$(DOCKER_HOST="$HOST" docker ps -aq --filter label=duplexeval.managed=1 2>/dev/null || true)
  if [ -n "$ids" ]; then
    # shellcheck disable=SC2086
    DOCKER_HOST="$HOST" docker rm -f $ids >/dev/null 2>&1 || true
  fi
  local pid
  pid=$(cat "$PIDFILE")
  $SUDO kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 30); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 1
  done
  if kill -0 "$pid" 2>/dev/null; then $SUDO kill -9 "$pid" 2>/dev/null || true; fi
  echo "docker-engine: stopped (pid $pid)"
}

case "${1:-}" in
  install) install_engine ;;
  start) start_engine ;;
  stop) stop_engine ;;
  env) echo "export DOCKER_HOST=$HOST" ;;
  *) echo "usage: $0 install|start|stop|env" >&2; exit 2 ;;
esac
