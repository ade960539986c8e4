"""``python -m xnnguide.doccheck PATH...``"""

import sys

from xnnguide.doccheck.cli import main

sys.exit(main())
