"""Text on figures: axis titles with units, and design labels placed around their markers so
that labels of designs close together do not overlap."""

from __future__ import annotations


def _axis_title(name: str, unit: str) -> str:
    return f"{name} ({unit})" if unit else name


#: Where a design's label may go around its star, in order of preference, and the offset of the
#: label box's centre from the star in plot fractions (x, y).
_LABEL_SPOTS = (("top center", 0.0, 0.045), ("bottom center", 0.0, -0.045),
                ("middle right", 1.0, 0.0), ("middle left", -1.0, 0.0),
                ("top right", 1.0, 0.045), ("bottom left", -1.0, -0.045),
                ("top left", -1.0, 0.045), ("bottom right", 1.0, -0.045))

#: A label's size in plot fractions: a character's width and the line's height (960 x 520 px).
_CHAR_W, _LINE_H = 0.0085, 0.04

def label_boxes(xn: list[float], yn: list[float], texts: list[str],
                spots: list[str]) -> list[tuple[float, float, float, float]]:
    """The (x0, x1, y0, y1) box, in plot fractions, of each label placed at its spot."""
    where = {name: (dx, dy) for name, dx, dy in _LABEL_SPOTS}
    out = []
    for x, y, t, spot in zip(xn, yn, texts, spots):
        w, h = _CHAR_W * max(len(t), 1), _LINE_H
        dx, dy = where[spot]
        cx = x + dx * (w / 2 + 0.015)
        cy = y + dy
        out.append((cx - w / 2, cx + w / 2, cy - h / 2, cy + h / 2))
    return out


def label_positions(xn: list[float], yn: list[float], texts: list[str]) -> list[str]:
    """A text position for each design's label so that no two labels (nor a label and
    another design's star) overlap where a free spot exists: each label takes the first spot
    around its star that is clear of the labels placed before it, top first."""
    def clash(a, b):
        return a[0] < b[1] and b[0] < a[1] and a[2] < b[3] and b[2] < a[3]

    stars = [(x - 0.012, x + 0.012, y - 0.02, y + 0.02) for x, y in zip(xn, yn)]
    placed: list[tuple[float, float, float, float]] = []
    out = []
    for i in sorted(range(len(texts)), key=lambda k: -yn[k]):
        choice = _LABEL_SPOTS[0][0]
        for name, _, _ in _LABEL_SPOTS:
            box = label_boxes([xn[i]], [yn[i]], [texts[i]], [name])[0]
            if not any(clash(box, b) for b in placed) and \
                    not any(clash(box, s) for j, s in enumerate(stars) if j != i):
                choice = name
                break
        out.append((i, choice))
        placed.append(label_boxes([xn[i]], [yn[i]], [texts[i]], [choice])[0])
    return [c for _, c in sorted(out)]
