"""Where the Debian packages put the external engines (/usr/games is not always on PATH)."""
import os
import shutil


def find_engine(name: str) -> str | None:
    path = shutil.which(name)
    if path:
        return path
    candidate = os.path.join("/usr/games", name)
    return candidate if os.access(candidate, os.X_OK) else None
