"""``python -m xnnguide.doccheck PATH...``"""

from xnnguide.doccheck.cli import main

raise SystemExit(main())
