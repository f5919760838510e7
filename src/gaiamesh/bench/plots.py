"""What every bench's figure shares: matplotlib without a display, and a figure saved the one way
(110 dpi) and closed so that a long bench does not keep every figure it drew."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from types import ModuleType

    from matplotlib.figure import Figure

DPI = 110


def pyplot() -> ModuleType:
    """``matplotlib.pyplot`` on the Agg backend: a bench draws to files, on machines with no
    display. Imported here, not at the top: only a bench that draws pays for matplotlib."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(fig: Figure, path: Path, **options: Any) -> None:
    """``fig`` to ``path`` at :data:`DPI` (``options``: savefig's own, e.g. ``bbox_inches``), then closed."""
    import matplotlib.pyplot as plt

    fig.savefig(path, dpi=DPI, **options)
    plt.close(fig)
