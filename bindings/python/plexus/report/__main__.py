"""python3 -m plexus.report: the plexus-report command (plexus.report.cli)."""
import sys

from plexus.report.cli import main

sys.exit(main())
