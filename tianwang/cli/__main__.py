"""`python -m tianwang.cli ...` is the `tianwang` command too (the tests run it so)."""

import sys

from tianwang.cli import main

sys.exit(main())
