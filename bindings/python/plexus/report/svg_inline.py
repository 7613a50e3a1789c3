"""An SVG file made fit to sit inline in an HTML page beside others: no XML prologue, and
every id (with the references to it) prefixed so that ids stay unique in the page."""
import re

_PROLOGUE = re.compile(r"^\s*(<\?xml[^>]*\?>\s*)?(<!DOCTYPE[^>]*>\s*)?", re.S)
_ID = re.compile(r'\bid="([^"]+)"')
_URL_REF = re.compile(r"url\(#([^)]+)\)")
_HREF = re.compile(r'(\b(?:xlink:)?href)="#([^"]+)"')


def inline_svg(svg_text, prefix):
    """`svg_text` (an SVG document as matplotlib writes it) without its XML declaration and
    DOCTYPE, each id="X" as id="<prefix>-X" and each url(#X) and href="#X" changed alike.
    Returns the <svg> element's text."""
    body = _PROLOGUE.sub("", svg_text, count=1)
    body = _ID.sub(lambda m: f'id="{prefix}-{m.group(1)}"', body)
    body = _URL_REF.sub(lambda m: f"url(#{prefix}-{m.group(1)})", body)
    return _HREF.sub(lambda m: f'{m.group(1)}="#{prefix}-{m.group(2)}"', body)
