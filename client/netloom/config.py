"""Where the command keeps its login: `<config dir>/netloom/config.json`, mode 0600.

The config dir is $XDG_CONFIG_HOME, else ~/.config (Windows: %APPDATA%). NETLOOM_URL and
NETLOOM_TOKEN override what is stored; NETLOOM_CONFIG names another file.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Login:
    """A service URL and an API token for it."""

    url: str
    token: str


def config_path() -> Path:
    """The file `netloom login` writes."""
    if os.environ.get("NETLOOM_CONFIG"):
        return Path(os.environ["NETLOOM_CONFIG"])
    base = (
        os.environ.get("XDG_CONFIG_HOME")
        or (os.environ.get("APPDATA") if os.name == "nt" else None)
        or str(Path.home() / ".config")
    )
    return Path(base) / "netloom" / "config.json"


def login_save(*, url: str, token: str, path: Path | None = None) -> Path:
    """Store the login, readable by the user only (written whole, then renamed into place)."""
    target = path or config_path()
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(prefix=".config.", dir=target.parent)  # mkstemp creates it 0600
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump({"url": url, "token": token}, handle, indent=2)
        os.chmod(tmp, 0o600)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def login_load(path: Path | None = None) -> Login | None:
    """The stored login with NETLOOM_URL / NETLOOM_TOKEN on top; None when either is missing."""
    stored: dict[str, str] = {}
    target = path or config_path()
    if target.exists():
        try:
            stored = json.loads(target.read_text())
        except (OSError, ValueError):
            stored = {}
    url = os.environ.get("NETLOOM_URL") or stored.get("url")
    token = os.environ.get("NETLOOM_TOKEN") or stored.get("token")
    if not url or not token:
        return None
    return Login(url=url.rstrip("/"), token=token)
