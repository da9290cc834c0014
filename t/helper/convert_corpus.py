#!/usr/bin/env python3
"""The conversion corpus: texts for every end-of-line, ident and encoding rule.

Generated, not stored: structured edge cases plus seeded random ones (fixed
seeds, so every run and both differential levels see the same corpus).
Used by t/test_convert.py (items to git's worker and to ours) and by
t/t2083-helper-conversions.sh (a checkout by real git, with and without our
helper), through:

  convert_corpus.py tree <dir> <attributes-file>
      writes every text as <dir>/a<k>/c<n> for each attribute set k (the
      eol/ident texts under the text/eol/crlf/ident sets, the encoding texts
      under working-tree-encoding sets), and the matching .gitattributes
      lines to <attributes-file>
  convert_corpus.py count
      the number of texts of each kind
"""

from __future__ import annotations

import os
import random
import sys
from collections.abc import Iterable


def unique(items: Iterable[bytes]) -> list[bytes]:
    return list(dict.fromkeys(items))


def eol_contents(n_random: int = 70, seed: int = 2082) -> list[bytes]:
    """LF, CRLF, lone CR, mixed, NUL, non-printables around git's 1/128
    threshold, BS/HT/ESC/FF (printable for git), a trailing Ctrl-Z, empty."""
    fixed = [
        b"", b"\n", b"\r\n", b"\r", b"\n\n", b"\r\r", b"\n\r", b"\r\n\n", b"\r\r\n",
        b"a", b"a\n", b"a\r\n", b"a\r", b"a\nb\n", b"a\r\nb\r\n", b"a\nb\r\n", b"a\r\nb\n",
        b"a\rb\n", b"a\rb\r\n", b"a\nb", b"a\r\nb", b"line1\nline2\nline3", b"\na\n",
        b"a\0b\n", b"\0", b"a\0\r\n", b"a\n\0",
        b"\x1a", b"\x1a\n", b"a\n\x1a", b"a\r\n\x1a", b"a\x1a\n", b"a\n\x1a\x1a", b"\x01\x1a\n",
        b"\x08\t\x1b\x0c\n", b"\x08\t\x1b\x0c" * 64 + b"\x01\n",
        b"\xc3\xa9t\xc3\xa9\n", b"\x80\xff\xfe\n", b"\x7f\n", b"\x0b\x0e\n",
        b"multi\r\nline\r\ntext", b"multi\nline\ntext",
    ]
    # Around "printable >> 7 < nonprintable".
    for printable in (0, 1, 127, 128, 129, 255, 256, 383, 384):
        for nonprint, byte in ((0, b"\x01"), (1, b"\x01"), (2, b"\x7f"), (3, b"\x0b"), (2, b"\x1a")):
            fixed.append(b"p" * printable + byte * nonprint + b"\nq\n")
            fixed.append(b"p" * printable + byte * nonprint + b"\r\nq\r\n")
    rng = random.Random(seed)
    tokens = [b"a", b"bc", b" ", b"\n", b"\r\n", b"\r", b"\0", b"\x01", b"\x7f", b"\x1a", b"\t",
              b"\x1b", b"\x08", b"\x0c", "\u00e9".encode(), b"x" * 70, b"\n\n", b"\x0b"]
    weights = [30, 20, 10, 25, 12, 4, 1, 2, 1, 2, 3, 1, 1, 1, 3, 4, 3, 1]
    out = []
    for _ in range(n_random):
        k = rng.choice((1, 2, 3, 5, 8, 13, 30, 60))
        out.append(b"".join(rng.choices(tokens, weights, k=k)))
        if rng.random() < 0.15:
            out[-1] += b"\x1a"
    return unique(fixed + out)


def ident_contents(n_random: int = 70, seed: int = 2083) -> list[bytes]:
    """``$Id$`` in all its shapes: expanded, foreign, broken by a newline,
    unfinished, after another ``$``, with NULs, CRs and tabs inside."""
    h40 = b"0123456789abcdef0123456789abcdef01234567"
    fixed = [
        b"$Id$", b"$Id$\n", b"x$Id$y\n", b"$Id$$Id$\n", b"$Id$Id$", b"$Id$\r\n$Id$\n",
        b"$Id: " + h40 + b" $\n", b"$Id: " + h40 * 2 + b" $\n", b"$Id:" + h40 + b"$\n",
        b"$Id: abc $\n", b"$Id:abc$", b"$Id: abc$", b"$Id:  $", b"$Id: $", b"$Id:$",
        b"$Id: foreign thing $\n", b"$Id: file.c,v 1.2 2001/01/01 user Exp $\n",
        b"$Id: x\t$", b"$Id: a\tb $", b"$Id: a\rb $", b"$Id: \r$", b"$Id: 123 \r$",
        b"$Id:x y $", b"$Id:x y$", b"$Id: a b$", b"$Id: a\0 b $", b"$Id: a \0b$", b"$Id:\0 x $",
        b"$Id:\n$", b"$Id: x\n$Id$\n", b"$Id:\r\n$", b"$Id: abc", b"$Id:", b"$Id", b"$I", b"$",
        b"$$Id$", b"$I$Id$", b"$Id $Id$", b"$IdX$Id$", b"$Id\0$Id$", b"$Id\0", b"$Id\0x",
        b"$Id:a$b$Id$", b"$Id: $Id$ $", b"$Id: $Id: $ $", b"a$\nb$Id$\n", b"$Id$\r\nline\n",
        b"$Id$\r\nmixed\nends\r\n", b"$Id:\n\r\n$Id$",
    ]
    rng = random.Random(seed)
    tokens = [b"$", b"I", b"d", b"Id", b"$Id", b"$Id$", b"$Id:", b":", b" ", b"\t", b"\r", b"\n",
              b"\r\n", b"x", b"\0", b"$Id: ", b"abc"]
    weights = [8, 2, 2, 3, 6, 4, 6, 2, 5, 2, 2, 4, 3, 5, 1, 4, 3]
    out = []
    for _ in range(n_random):
        k = rng.choice((2, 3, 4, 6, 9, 14, 25))
        out.append(b"".join(rng.choices(tokens, weights, k=k)))
    return unique(fixed + out)


def encoding_texts(n_random: int = 12, seed: int = 2084) -> list[bytes]:
    """UTF-8 texts with non-ASCII (and a few that are not valid UTF-8)."""
    texts = [
        "hello\n", "h\u00e9llo w\u00f6rld \u00a3\n", "line1\r\nline2\n", "k\u00f6nig",
        "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\n", "\u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac \u041f\u0440\u0438\u0432\u0435\u0442\n",
        "\U0001F600 emoji\n", "\ufeffBOM first\n", "tab\tand $Id$\n", "\u20ac euro \u00a5 \u2014\n",
        "\u3042\u3044", "\ud55c\uad6d\uc5b4\n", "\u0e20\u0e32\u0e29\u0e32\u0e44\u0e17\u0e22\n",
        "caf\u00e9\ncr\u00e8me\r\n",
    ]
    raw = [t.encode() for t in texts] + [
        b"\xff\xfe bad\n", b"trunc \xc3", b"surrogate \xed\xa0\x80\n", b"overlong \xc0\xaf\n",
        b"nonchar \xef\xbf\xbe\n", b"max \xf4\x8f\xbf\xbf\n", b"beyond \xf4\x90\x80\x80\n", b"",
    ]
    pool = ("abc \n\r\n\u00e9\u00fc\u00df\u00a3\u20ac\u0416\u03a9\u05d0\u0627\u3042\u6f22\uac00"
            "\uff5e\u301c\u00a5\u203e\u2016\U0001F600\u0152\u00d7\u1ea0")
    rng = random.Random(seed)
    for _ in range(n_random):
        raw.append("".join(rng.choices(pool, k=rng.randint(1, 24))).encode())
    return unique(raw)


#: Encodings crossed with every text: git's own BOM spellings, glibc names with
#: and without a verified Python codec, names only Python knows, nonsense.
ENCODINGS = [
    "UTF-16", "UTF-16LE", "UTF-16BE", "UTF-16LE-BOM", "UTF-16BE-BOM", "utf-16le-bom", "UTF16BE-BOM",
    "utf16", "utf 16", "UTF-16/", "UTF-16//IGNORE", "UTF-16/x", "UTF-16,IGNORE",
    "UTF-32", "UTF-32LE", "UTF-32BE", "UTF-32LE-BOM", "UTF-32BE-BOM",
    "UCS-2", "UCS-2LE", "UCS-2BE", "UCS-4", "UCS-4LE", "UNICODE", "WCHAR_T",
    "UTF-8", "utf8", "UTF_8", "UTF-7",
    "ISO-8859-1", "latin1", "latin-1", "LATIN-1", "ISO_8859-1:1987", "ISO-8859-15", "ISO8859-5",
    "CP1252", "WINDOWS-1252", "windows-1251", "KOI8-R", "CP437", "CP850", "MACINTOSH", "TIS-620",
    "ASCII", "US-ASCII", "ASCII//TRANSLIT", "ASCII//IGNORE",
    "SHIFT_JIS", "SJIS", "CP932", "EUC-JP", "EUC-KR", "CP949", "GBK", "GB18030", "BIG5",
    "ISO-2022-JP", "ISO-2022-KR", "IBM037", "EBCDIC-US",
    "utf-8-sig", "idna", "rot13", "unicode_escape", "NO-SUCH-ENCODING", "x",
]
#: Encodings also crossed with every crlf_action, ident and setting.
KEY_ENCODINGS = ["UTF-16", "UTF-16LE-BOM", "UTF-32", "UCS-2", "ISO-8859-1", "SHIFT_JIS", "EUC-JP",
                 "UTF-7", "ISO-2022-JP", "NO-SUCH-ENCODING"]


#: Attribute sets of the checkout corpus (t2083): every way to ask for an
#: end-of-line conversion, with and without ident.
EOL_ATTRIBUTES = [
    "", "-text", "text", "text=auto", "text eol=lf", "text eol=crlf", "text=auto eol=lf",
    "text=auto eol=crlf", "eol=lf", "eol=crlf", "crlf", "-crlf", "crlf=input", "binary",
]
#: Encodings of the checkout corpus, each with these other attributes.
TREE_ENCODINGS = ["UTF-16", "UTF-16LE-BOM", "UTF-32", "UCS-2", "ISO-8859-1", "latin-1", "CP1252",
                  "SHIFT_JIS", "EUC-JP", "UTF-7", "ISO-2022-JP", "NO-SUCH-ENCODING"]
ENCODING_WITH = ["", "text", "eol=crlf", "text=auto ident"]


def tree(top: str, attributes: str) -> int:
    texts = unique(eol_contents() + ident_contents())[::10]
    sets = [(a + extra).strip() for a in EOL_ATTRIBUTES for extra in ("", " ident")]
    lines = []
    k = 0
    for attrs, contents in [(a, texts) for a in sets] + [
        (f"working-tree-encoding={e} {w}".strip(), encoding_texts()[::3]) for e in TREE_ENCODINGS
        for w in ENCODING_WITH
    ]:
        d = os.path.join(top, f"a{k}")
        os.makedirs(d)
        for n, data in enumerate(contents):
            with open(os.path.join(d, f"c{n}"), "wb") as f:
                f.write(data)
        lines.append(f"/a{k}/* {attrs}\n" if attrs else f"/a{k}/* !text\n")
        k += 1
    with open(attributes, "w") as f:
        f.writelines(lines)
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["tree"] and len(argv) == 3:
        return tree(argv[1], argv[2])
    if argv == ["count"]:
        texts = unique(eol_contents() + ident_contents())
        print(f"eol {len(eol_contents())} ident {len(ident_contents())} distinct {len(texts)} "
              f"encoding-texts {len(encoding_texts())} encodings {len(ENCODINGS)}")
        return 0
    sys.stderr.write(__doc__)
    return 129


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
