import sys

from fixer.cli import main

sys.exit(main())
