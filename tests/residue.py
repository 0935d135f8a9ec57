"""Where deleted text may still be: any file under a home (grep), and tantivy's segments, whose
term dictionary (an FST) does not hold terms as plain bytes, so only tantivy itself can say."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path


def file_residue(home: Path, words: set[str]) -> list[str]:
    """``path: word`` for every file under ``home`` whose bytes (or name) hold one of ``words``."""
    needles = [(w, w.encode(), w.encode("utf-16-le")) for w in sorted(words)]
    found = []
    for path in sorted(home.rglob("*")):
        rel = path.relative_to(home).as_posix()
        found += [f"{rel}: {w} (name)" for w, _, _ in needles if w in rel.lower()]
        if path.is_file() and not path.is_symlink():
            try:
                data = path.read_bytes().lower()
            except OSError:
                continue
            found += [f"{rel}: {w}" for w, plain, wide in needles if plain in data or wide in data]
    return found


def tantivy_residue(home: Path, words: set[str]) -> dict[str, dict[str, int]]:
    """Each tantivy segment on disk (referenced by meta.json or not), opened alone and asked for
    the document frequency of each word's analysed terms: ``{segment: {term: doc_freq}}``."""
    import tantivy

    from citewell.index.lexical import ANALYZER, _analyzer, analyse

    terms = sorted({t for w in words for t in analyse(w)})
    found: dict[str, dict[str, int]] = {}
    if not terms:
        return found
    for folder in sorted(p for p in (home / "lexical").glob("*") if p.is_dir()):
        meta_path = folder / "meta.json"
        if not meta_path.exists():
            continue
        meta = json.loads(meta_path.read_text())
        if "schema" not in meta:
            continue
        ids = sorted({m.group(1) for f in folder.iterdir() if (m := re.fullmatch(r"([0-9a-f]{32})\..+", f.name))})
        for sid in ids:
            with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp:  # tantivy may still write its lock
                for f in folder.iterdir():
                    if f.name.startswith(sid + ".") and not f.name.endswith(".del"):
                        shutil.copy(f, tmp)
                uuid = f"{sid[:8]}-{sid[8:12]}-{sid[12:16]}-{sid[16:20]}-{sid[20:]}"
                alone = {**meta, "segments": [{"segment_id": uuid, "max_doc": 1, "deletes": None}]}
                (Path(tmp) / "meta.json").write_text(json.dumps(alone))
                try:
                    index = tantivy.Index.open(tmp)
                    index.register_tokenizer(ANALYZER, _analyzer())
                    searcher = index.searcher()
                    hits = {t: n for t in terms if (n := searcher.doc_freq("words", t))}
                    del searcher, index
                except Exception as error:  # an unreadable segment is reported, not skipped
                    hits = {f"<unreadable: {str(error)[:60]}>": 1}
                if hits:
                    found[f"{folder.name}/{sid}"] = hits
    return found


def sqlite_rows(home: Path, words: set[str]) -> list[str]:
    """``file table: word`` for every live row of a SQLite file under ``home`` holding one of
    ``words``, so a residue found in a database's bytes says whether a row keeps it (and
    which) or only freed pages do."""
    import sqlite3

    found = []
    for path in sorted(home.rglob("*.db")):
        try:
            connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        except sqlite3.Error:
            continue
        try:
            tables = [r[0] for r in connection.execute("select name from sqlite_master where type = 'table'")]
            for table in tables:
                for row in connection.execute(f'select * from "{table}"'):  # noqa: S608 - names from the file itself
                    text = " ".join(str(v).lower() for v in row if isinstance(v, str | bytes))
                    found += [f"{path.relative_to(home).as_posix()} {table}: {w} in {text[:160]!r}" for w in sorted(words) if w in text]
        except sqlite3.Error as error:
            found.append(f"{path.name}: unreadable ({error})")
        finally:
            connection.close()
    return found
