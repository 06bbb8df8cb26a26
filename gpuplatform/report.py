"""Text helpers the command reports share (``plan``, ``simulate --compare-pools``): a module of their own so a
report of one command never imports another command to lay out its table."""


def table(rows: list[list[str]]) -> str:
    """Columns padded to their widest cell, two spaces apart, trailing blanks stripped; the first row is the header."""
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)
