"""``python -m bot`` is ``digestbot``."""

from bot.cli import main

raise SystemExit(main())
