"""`roost web-token`: print the web page's access token (or its `#token=` link).

The first `roost serve` prints the link with a new token only on a terminal: under
systemd stdout is the journal, which the `adm` group reads and which is kept, so
there it names the `web-token` file and this command instead. It reads the token as
the daemon does (`web.token` / ROOST_WEB__TOKEN, else `$ROOST_HOME/web-token`) and
writes nothing: it makes no token (the first start does).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bridge.core.config import Settings


def web_token_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--link",
        action="store_true",
        help="print the page's address with #token= (as configured: [web] host and port)",
    )


def run_web_token(args: argparse.Namespace, settings: Settings) -> int:
    from bridge.app.channels_up import page_url

    if settings.web.token is not None:
        token = settings.web.token.get_secret_value()
    else:
        path = settings.home / "web-token"
        try:
            token = path.read_text().strip()
        except FileNotFoundError:
            print(
                f"roost: no web token yet: the first `roost serve` makes one and keeps it "
                f"in {path}",
                file=sys.stderr,
            )
            return 1
    if args.link and settings.web.port == 0:  # a port chosen at each start: not known here
        print(
            "roost: web.port is 0 (chosen at each start): the daemon's start line names the "
            "address; the token is:",
            file=sys.stderr,
        )
        print(token)
    elif args.link:
        print(f"{page_url(settings.web.host, settings.web.port)}#token={token}")
    else:
        print(token)
    return 0
