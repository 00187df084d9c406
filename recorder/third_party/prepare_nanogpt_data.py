"""Writes nanoGPT's data files for a character-level run, with random text.

nanoGPT's train.py reads data/<dataset>/{train,val}.bin (uint16 token ids)
and meta.pkl (vocab_size, stoi, itos), as its data/shakespeare_char/prepare.py
writes them. capsim's recordings need no real text, only the shapes, so this
writes the same three files for dataset "random" from a seeded generator:
65 characters (newline, then space to '_'), 4096 training and 512 validation tokens. Run in the
directory train.py and sample.py run in.
"""
import os
import pickle

import numpy as np

chars = ["\n"] + [chr(c) for c in range(ord(" "), ord(" ") + 64)]  # sample.py starts at "\n"
stoi = {ch: i for i, ch in enumerate(chars)}
itos = {i: ch for i, ch in enumerate(chars)}
rng = np.random.default_rng(0)
os.makedirs(os.path.join("data", "random"), exist_ok=True)
for split, count in (("train", 4096), ("val", 512)):
    ids = rng.integers(0, len(chars), size=count).astype(np.uint16)
    ids.tofile(os.path.join("data", "random", split + ".bin"))
with open(os.path.join("data", "random", "meta.pkl"), "wb") as f:
    pickle.dump({"vocab_size": len(chars), "itos": itos, "stoi": stoi}, f)
