"""Two builds of one image at once (two `duplexeval image build`s, two pytest workers) fill
the same content-addressed wheelhouse: the second to finish must take the first's folder,
not fail on it, and leave no partial folder behind."""

from __future__ import annotations

import threading

from duplexeval.containers import wheelhouse


def test_two_concurrent_downloads_of_one_key_both_return_the_complete_folder(tmp_path, monkeypatch):
    image = tmp_path / "image"
    image.mkdir()
    (image / "requirements.txt").write_text("annotated-types\n")  # a small pure wheel of the lock
    monkeypatch.setenv("DUPLEXEVAL_WHEELHOUSE", str(tmp_path / "wheelhouse"))
    both_downloaded = threading.Barrier(2, timeout=300)
    real_download = wheelhouse._pip_download

    def download_then_wait(args, dest, what):  # the real pip download; then both race to publish
        real_download(args, dest, what)
        both_downloaded.wait()

    monkeypatch.setattr(wheelhouse, "_pip_download", download_then_wait)
    results: list[object] = [None, None]

    def build(n: int) -> None:
        try:
            results[n] = wheelhouse.ensure_wheelhouse(image, progress=lambda line: None)
        except BaseException as exc:  # noqa: BLE001 - the assertion below shows it
            results[n] = exc

    threads = [threading.Thread(target=build, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results[0] == results[1] and not isinstance(results[0], BaseException), results
    folder = results[0]
    assert (folder / wheelhouse.MANIFEST).exists() and any(p.suffix == ".whl" for p in folder.iterdir())
    assert [p.name for p in folder.parent.iterdir()] == [folder.name]  # no .partial-* left
