"""Where gym-cpp's `gym` executable is."""

import os
import shutil
from pathlib import Path

GYM_BINARY_ENV_VAR_NAME = "GYM_BINARY"


def find_gym_binary() -> str:
    """GYM_BINARY when set, else the binary inside this package (a wheel from `make wheel`),
    else `gym` on PATH. Raises FileNotFoundError saying how to provide one."""
    explicit = os.environ.get(GYM_BINARY_ENV_VAR_NAME)
    if explicit:
        if not (os.path.isfile(explicit) and os.access(explicit, os.X_OK)):
            raise FileNotFoundError(f"{GYM_BINARY_ENV_VAR_NAME}={explicit} is not an executable file")
        return explicit
    bundled = Path(__file__).resolve().parent / "_bin" / "gym"
    if bundled.is_file() and os.access(bundled, os.X_OK):
        return str(bundled)
    on_path = shutil.which("gym")
    if on_path:
        return on_path
    raise FileNotFoundError(
        "gym-cpp's `gym` binary was not found: set GYM_BINARY=/path/to/gym, put gym on PATH "
        "(`make install` in a gym-cpp checkout), or install the wheel `make wheel` builds, "
        "which carries the binary"
    )
