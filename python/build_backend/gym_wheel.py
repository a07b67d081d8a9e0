"""The PEP 517 build backend of the `nemo-gym` distribution that gym-cpp ships.

It lives in the tree and needs nothing but the standard library, so `pip install ./python`
works offline: with `requires = []` pip's isolated build environment has nothing to download.

A wheel holds the `nemo_gym` package and its metadata. When the environment variable
`GYM_WHEEL_BINARY` names a built `gym` executable (`make wheel` sets it), the wheel also
carries it as `nemo_gym/_bin/gym` and is tagged for this platform instead of `any`.
"""

import base64
import hashlib
import io
import os
import platform
import re
import stat
import sys
import tarfile
import time
import zipfile
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent
_PACKAGE = "nemo_gym"
_BINARY_ENV = "GYM_WHEEL_BINARY"


def _project():
    """name, version, requires-python and dependencies from pyproject.toml (tomllib: 3.11+)."""
    import tomllib

    with open(_ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]


def _dist_name(name):
    return re.sub(r"[-_.]+", "_", name).lower()


def _metadata():
    p = _project()
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {p['name']}",
        f"Version: {p['version']}",
        f"Summary: {p.get('description', '')}",
        f"Requires-Python: {p.get('requires-python', '>=3.10')}",
    ]
    lines += [f"Requires-Dist: {d}" for d in p.get("dependencies", [])]
    for extra, deps in p.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {d}; extra == "{extra}"' for d in deps]
    readme = _ROOT / "README.md"
    if readme.exists():
        lines += ["Description-Content-Type: text/markdown", "", readme.read_text()]
    return "\n".join(lines) + "\n"


def _platform_tag():
    machine = platform.machine().lower() or "unknown"
    return f"{sys.platform}_{machine}".replace("-", "_").replace(".", "_")


def _package_files():
    """(path inside the wheel, bytes, executable) for every file of the package."""
    files = []
    for path in sorted((_ROOT / _PACKAGE).rglob("*")):
        if path.is_dir() or "__pycache__" in path.parts or path.suffix == ".pyc":
            continue
        rel = path.relative_to(_ROOT).as_posix()
        if rel.startswith(f"{_PACKAGE}/_bin/"):
            continue  # only a binary named by GYM_WHEEL_BINARY goes in
        files.append((rel, path.read_bytes(), False))
    binary = os.environ.get(_BINARY_ENV)
    if binary:
        if not os.access(binary, os.X_OK):
            raise RuntimeError(f"{_BINARY_ENV}={binary} is not an executable file")
        files.append((f"{_PACKAGE}/_bin/gym", Path(binary).read_bytes(), True))
    return files, bool(binary)


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _zip_info(name, executable):
    info = zipfile.ZipInfo(name, date_time=time.gmtime(1_700_000_000)[:6])
    mode = 0o755 if executable else 0o644
    info.external_attr = (stat.S_IFREG | mode) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


# ---- PEP 517 hooks ----


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    p = _project()
    dist_info = f"{_dist_name(p['name'])}-{p['version']}.dist-info"
    target = Path(metadata_directory) / dist_info
    target.mkdir(parents=True, exist_ok=True)
    (target / "METADATA").write_text(_metadata())
    return dist_info


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    p = _project()
    files, with_binary = _package_files()
    tag = f"py3-none-{_platform_tag()}" if with_binary else "py3-none-any"
    dist = f"{_dist_name(p['name'])}-{p['version']}"
    dist_info = f"{dist}.dist-info"
    wheel_meta = (
        "Wheel-Version: 1.0\n"
        "Generator: gym-cpp build_backend\n"
        f"Root-Is-Purelib: {'false' if with_binary else 'true'}\n"
        f"Tag: {tag}\n"
    )
    files += [
        (f"{dist_info}/METADATA", _metadata().encode(), False),
        (f"{dist_info}/WHEEL", wheel_meta.encode(), False),
    ]
    record = [_record_line(name, data) for name, data, _ in files] + [f"{dist_info}/RECORD,,"]
    files.append((f"{dist_info}/RECORD", ("\n".join(record) + "\n").encode(), False))

    filename = f"{dist}-{tag}.whl"
    Path(wheel_directory).mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(Path(wheel_directory) / filename, "w") as whl:
        for name, data, executable in files:
            whl.writestr(_zip_info(name, executable), data)
    return filename


def build_sdist(sdist_directory, config_settings=None):
    p = _project()
    base = f"{_dist_name(p['name'])}-{p['version']}"
    filename = f"{base}.tar.gz"
    Path(sdist_directory).mkdir(parents=True, exist_ok=True)
    with tarfile.open(Path(sdist_directory) / filename, "w:gz") as tar:
        for path in sorted(_ROOT.rglob("*")):
            rel = path.relative_to(_ROOT)
            if path.is_dir() or "__pycache__" in rel.parts or rel.parts[0] in ("build", "dist"):
                continue
            if rel.parts[:2] == (_PACKAGE, "_bin"):
                continue
            tar.add(path, arcname=f"{base}/{rel.as_posix()}")
        pkg_info = io.BytesIO(_metadata().encode())
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        info.size = len(pkg_info.getvalue())
        tar.addfile(info, pkg_info)
    return filename
