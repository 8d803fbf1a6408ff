"""`python -m tianwang ...` is the `tianwang` command (works before a shell rehash)."""

import sys

from tianwang.cli import main

sys.exit(main())
