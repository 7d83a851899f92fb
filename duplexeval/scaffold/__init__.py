"""`duplexeval new-model NAME`: a model folder outside the repository that works as written.

A model author's first hour used to go on an `include:` that cannot reach the bundle, a
copied Dockerfile whose paths and CMD still named the silent agent, and a
requirements.txt missing the protocol server's own packages. The scaffold writes the
spec whole (resolved from the bundle's reference-agent base, so it follows the schema
of this version), a shim that already speaks protocol v1, a Dockerfile whose COPY paths
and CMD name the new model, and requirements pinned from the lock.
"""

from __future__ import annotations

import keyword
import re
from pathlib import Path
from typing import Any

import jinja2
import yaml

from duplexeval.io import atomic_write_text

TEMPLATES = ("silent", "echo")
BEHAVIOUR = {"silent": "never speaking", "echo": "echoing what it hears 2 s late at half volume"}
ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9.-]*$")
PROTOCOL_PACKAGES = ("numpy", "websockets", "jsonschema")  # what duplexeval.protocol imports


class ScaffoldError(ValueError):
    """A name, template or target folder the scaffold refuses; the message says which and why."""


def protocol_pins(lock: Path) -> list[str]:
    """`name==version` of the protocol server's packages, as requirements/lock.txt pins them."""
    pins = {}
    for line in lock.read_text(encoding="utf-8").splitlines():
        name, sep, version = line.split("#", 1)[0].strip().partition("==")
        if sep:
            pins[name.split("[", 1)[0].strip().lower()] = f"{name.strip()}=={version.strip()}"
    missing = [p for p in PROTOCOL_PACKAGES if p not in pins]
    if missing:
        raise ScaffoldError(f"{lock}: no pin for {', '.join(missing)} (the protocol server needs them)")
    return [pins[p] for p in PROTOCOL_PACKAGES]


def model_spec(model_id: str, template: str, base: dict[str, Any]) -> dict[str, Any]:
    """The new spec: the reference agents' resolved base, made the author's own."""
    launch = {k: v for k, v in base["launch"].items() if k not in ("command", "image", "build")}
    launch.update({"backend": "local", "command": ["{python}", f"images/{model_id}/shim.py", "--socket", "{socket}"],
                   "image": f"{model_id}:dev", "build": f"images/{model_id}"})
    spec = {"kind": "model", "id": model_id, "name": f"{model_id} (scaffolded: {BEHAVIOUR[template]})",
            "description": "Replace with what the model is; the shim in images/ says where its step goes.",
            "status": "runnable", "duplex": base["duplex"], "launch": launch, "audio": base["audio"],
            "clocks": base["clocks"], "capabilities": ["teacher_forcing", "fork"],
            "weights": {"source": "none"}, "license": {"code": "state yours", "weights": "state yours"}}
    return spec


def scaffold(model_id: str, dest: Path, template: str = "silent") -> list[Path]:
    """Write the model folder under `dest`; refuse to overwrite anything. Returns the files written."""
    from duplexeval.resources import bundle_root
    from duplexeval.specs import default_registry

    if not ID_PATTERN.fullmatch(model_id):
        raise ScaffoldError(f"model name {model_id!r}: use lower-case letters, digits, '.' and '-' "
                            "(it becomes the spec id, the image folder and the image tag)")
    if template not in TEMPLATES:
        raise ScaffoldError(f"--from {template!r}: choose one of {', '.join(TEMPLATES)}")
    registry = default_registry()
    if model_id in {s.id for s in registry.all("model")}:
        raise ScaffoldError(f"model id {model_id!r} is already taken by {registry.get('model', model_id).path}; "
                            "ids are global, choose another")
    files = {dest / "specs" / "models" / f"{model_id}.yaml": None,
             dest / "images" / model_id / "shim.py": "shim.py.j2",
             dest / "images" / model_id / "Dockerfile": "Dockerfile.j2",
             dest / "images" / model_id / "requirements.txt": "requirements.txt.j2",
             dest / "images" / model_id / "README.md": "README.md.j2"}
    taken = [p for p in files if p.exists()]
    if taken:
        raise ScaffoldError(f"{taken[0]} already exists; new-model never overwrites (choose another name or folder)")
    base = registry.get("model", "silent").data
    context = {"id": model_id, "name": model_id, "template": template, "behaviour": BEHAVIOUR[template],
               "class_name": _class_name(model_id), "rate": base["audio"]["in_rate"],
               "frame_ms": float(base["audio"]["frame_ms"]),
               "protocol_pins": protocol_pins(bundle_root() / "requirements" / "lock.txt")}
    env = jinja2.Environment(loader=jinja2.PackageLoader("duplexeval.scaffold", "templates"),
                             keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True,
                             undefined=jinja2.StrictUndefined, autoescape=False)
    for path, template_name in files.items():
        if template_name is None:
            text = ("# Written by `duplexeval new-model`: a whole spec (an include cannot reach the bundle\n"
                    "# from outside it). `duplexeval validate` checks it; docs/models.md says what each field means.\n"
                    + yaml.safe_dump(model_spec(model_id, template, base), sort_keys=False, allow_unicode=True))
        else:
            text = env.get_template(template_name).render(**context)
        atomic_write_text(path, text)
    return list(files)


def _class_name(model_id: str) -> str:
    name = "".join(part.capitalize() for part in re.split(r"[.-]", model_id) if part) + "Model"
    return name if name.isidentifier() and not keyword.iskeyword(name) else "ScaffoldedModel"
