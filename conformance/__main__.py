from . import _sigint

_sigint.hold()  # from before the command line's imports: a Ctrl-C there is noted, not a traceback
from .cli import run  # noqa: E402

run()
