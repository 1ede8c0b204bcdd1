"""What the project's plotting scripts share: matplotlib's pyplot on the file-only Agg backend."""

import sys


def pyplot(tool):
    """matplotlib.pyplot drawing to files, or None, after a message naming `tool`, where matplotlib
    is not installed (the scripts then exit 3, which their CTest entries count as skipped)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"{tool}: matplotlib is not installed (apt-get install python3-matplotlib, or pip install "
              "matplotlib); no plot drawn", file=sys.stderr)
        return None
    return plt


def save(figure, path, tool):
    """Lays `figure` out, writes it to `path` and says so, as `tool`."""
    figure.tight_layout()
    figure.savefig(path)
    print(f"{tool}: wrote {path}")
