#!/usr/bin/env python3
"""Load the HTML results page in headless Chromium (Debian's package) and check it as a
reader sees it: the cells of given cases, after the page's script ran, and the filters.

Usage: page_check.py PAGE.html SCREENSHOT.png [--width PX] [--expect IMPL CASE OUTCOME]...
                     [--filtered HASH VISIBLE-CASE HIDDEN-CASE]... [--anchor ID]...

--width: the window width of every load and of the screenshot (default 1280). At it, each
  matrix box must fit the window and scroll sideways (overflow auto), with its case column
  sticky: every column is reachable.

--expect: the cell of implementation IMPL and case CASE shows OUTCOME (its data-outcome) and
  has a title (the hover text) that starts with it.
--filtered: opened at PAGE.html#HASH (e.g. class=security&outcome=failures), the row of
  VISIBLE-CASE is shown and the row of HIDDEN-CASE is hidden.
--anchor: opened at PAGE.html#ID (an element's anchor, not a filter), no row is hidden, and a
  screenshot there (SCREENSHOT with -ID before .png) is not blank in its upper half: headless
  Chromium painted a page whose document scrolled at its unscrolled place, leaving the area
  above the table blank.
Exits 0 when every check holds, 1 otherwise (each failed check is printed); 2 when Chromium
cannot be run. Chromium runs with a fresh profile and no network use of its own.
"""
import html.parser
import os
import struct
import zlib
import shutil
import subprocess
import sys
import tempfile

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         "--disable-default-apps", "--virtual-time-budget=5000"]


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    sys.exit("page_check.py: no chromium on PATH (apt-get install -y chromium)")


def run(args, profile):
    cmd = [chromium(), *FLAGS, f"--user-data-dir={profile}", *args]
    out = subprocess.run(cmd, capture_output=True, timeout=120)
    if out.returncode != 0:
        sys.stderr.write(out.stderr.decode(errors="replace")[-2000:])
        sys.exit(f"page_check.py: chromium exited {out.returncode}")
    return out.stdout.decode("utf-8", errors="replace")


class Dom(html.parser.HTMLParser):
    """The cells (impl, case) -> attributes, the rows case -> hidden, the body's data-ready."""

    def __init__(self):
        super().__init__()
        self.cells, self.rows, self.ready, self.boxes = {}, {}, False, {}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body":
            self.ready = a.get("data-ready") == "1"
        elif tag == "td" and "data-case" in a:
            self.cells[(a["data-impl"], a["data-case"])] = a
        elif tag == "tr" and "data-id" in a:
            self.rows[a["data-id"]] = "hidden" in a
        elif tag == "div" and "scroll" in (a.get("class") or "").split():
            self.boxes[a.get("id", "?")] = a


WIDTH = [1280]


def png_rows(path):
    """The rows of an 8-bit RGB or RGBA PNG (what Chromium writes), unfiltered, as bytes."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, width, height, bpp = 8, b"", 0, 0, 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            if depth != 8 or color not in (2, 6) or body[12] != 0:
                raise ValueError(f"PNG depth {depth} colour type {color} interlace {body[12]}")
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + a) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + b) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        rows.append(bytes(line))
        prev = line
    return rows, bpp


def blank_rows(path):
    """How many of the upper half's rows of a screenshot are one colour, and the half's rows."""
    rows, bpp = png_rows(path)
    half = rows[:len(rows) // 2]
    return sum(1 for r in half if len(set(r[i:i + 3] for i in range(0, len(r), bpp))) == 1), len(half)


def dom(url, profile):
    d = Dom()
    d.feed(run([f"--window-size={WIDTH[0]},1000", "--dump-dom", url], profile))
    return d


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    page, shot, rest = os.path.abspath(argv[0]), os.path.abspath(argv[1]), argv[2:]
    if rest[:1] == ["--width"] and len(rest) > 1:
        WIDTH[0], rest = int(rest[1]), rest[2:]
    url = "file://" + page
    failures, checks = [], 0
    with tempfile.TemporaryDirectory(prefix="page-check-") as profile:
        d = dom(url, profile)
        if not d.ready:
            failures.append("the page's script did not run (no data-ready on <body>)")
        checks += 1
        if not d.boxes:
            failures.append(f"width {WIDTH[0]}: no scrolling box around the matrices")
        for name, box in d.boxes.items():
            if box.get("data-fits") != "1" or box.get("data-overflow") not in ("auto", "scroll") \
                    or box.get("data-sticky") != "sticky":
                failures.append(f"width {WIDTH[0]}: #{name} fits={box.get('data-fits')} "
                                f"overflow={box.get('data-overflow')} "
                                f"case column={box.get('data-sticky')}")
        i = 0
        while i < len(rest):
            if rest[i] == "--expect" and i + 3 < len(rest):
                imp, case, outcome = rest[i + 1:i + 4]
                cell = d.cells.get((imp, case))
                checks += 1
                if cell is None:
                    failures.append(f"no cell for {imp} / {case}")
                elif cell.get("data-outcome") != outcome:
                    failures.append(f"{imp} / {case}: {cell.get('data-outcome')!r}, expected {outcome!r}")
                elif not cell.get("title", "").startswith(outcome):
                    failures.append(f"{imp} / {case}: hover text {cell.get('title')!r}")
                i += 4
            elif rest[i] == "--filtered" and i + 3 < len(rest):
                frag, shown, hidden = rest[i + 1:i + 4]
                f = dom(f"{url}#{frag}", profile)
                checks += 1
                if f.rows.get(shown) is not False:
                    failures.append(f"#{frag}: {shown} is not shown ({f.rows.get(shown)})")
                if f.rows.get(hidden) is not True:
                    failures.append(f"#{frag}: {hidden} is not hidden ({f.rows.get(hidden)})")
                i += 4
            elif rest[i] == "--anchor" and i + 1 < len(rest):
                anchor = rest[i + 1]
                f = dom(f"{url}#{anchor}", profile)
                checks += 1
                hidden = [r for r, h in f.rows.items() if h]
                if not f.rows or hidden:
                    failures.append(f"#{anchor}: {len(hidden)} of {len(f.rows)} rows hidden")
                at = shot[:-4] + "-" + anchor.replace("/", "_") + ".png"
                run([f"--screenshot={at}", f"--window-size={WIDTH[0]},1000", f"{url}#{anchor}"],
                    profile)
                checks += 1
                blank, half = blank_rows(at)
                # The rows between two lines of text are one colour; half of the upper half
                # blank is a page painted away from where it scrolled.
                if blank * 2 > half:
                    failures.append(f"#{anchor}: the screenshot {at} is blank in {blank} of the "
                                    f"upper half's {half} rows")
                i += 2
            else:
                sys.exit(f"page_check.py: bad arguments at {rest[i:]!r}")
        run([f"--screenshot={shot}", f"--window-size={WIDTH[0]},1000", url], profile)
    if not os.path.isfile(shot):
        failures.append(f"no screenshot at {shot}")
    for f in failures:
        print(f"page_check.py: FAIL {f}")
    print(f"page_check.py: {checks - len(failures)} passed, "
          f"{len(failures)} failed ({len(d.cells)} cells on the page; screenshot {shot})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
