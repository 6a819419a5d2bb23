"""``python -m llsdk`` is the ``llsdk`` command."""

from .cli import main

raise SystemExit(main())
