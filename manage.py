#!/usr/bin/env python
import os
import sys


def main():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "silentstar.settings")
    from django.core.management import execute_from_command_line

    from silentstar.disks import disk_said, disk_trouble

    try:
        execute_from_command_line(sys.argv)
    except Exception as error:
        # A full disk or read-only data stops any command with one sentence, not a traceback
        # (unless --traceback asks for one).
        trouble = disk_trouble(error)
        if trouble is None or "--traceback" in sys.argv:
            raise
        sys.stderr.write(disk_said(trouble, stopped="Stopped", again="run it again") + "\n")
        sys.exit(1)


if __name__ == "__main__":
    main()
