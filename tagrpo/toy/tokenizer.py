"""Tokenizers built locally with ``tokenizers`` and saved in Hugging Face format: no hub, no download.

- ``build_char_tokenizer``: one token per character, for the tests' tiny models.
- ``build_world_tokenizer``: the embedded world's tokenizer. Digits and punctuation stay single characters (so
  arithmetic is done digit by digit) while every word of the world, with its leading space, becomes one token
  through BPE merges learned on the world's own texts; any other printable text still round-trips, character by
  character. Sequences are about four times shorter than with characters, which is what makes the demo fast.
"""

from __future__ import annotations

import string
from collections.abc import Iterable

from tokenizers import Regex, Tokenizer, decoders, pre_tokenizers
from tokenizers.models import BPE
from tokenizers.trainers import BpeTrainer
from transformers import PreTrainedTokenizerFast

PAD, EOS, UNK = "<pad>", "<eos>", "<unk>"
CHARS = "".join(sorted(set(string.printable) - set("\r\x0b\x0c")))
# A word with its leading space, ``\boxed{``, a digit, a whitespace character or any other single character.
WORLD_PIECES = r"\\boxed\{| ?[A-Za-z]+|\d|\s|[^\sA-Za-z\d]"


def _wrap(tok: Tokenizer) -> PreTrainedTokenizerFast:
    tok.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token=PAD, eos_token=EOS, unk_token=UNK, padding_side="left"
    )


def build_char_tokenizer(chars: str = CHARS) -> PreTrainedTokenizerFast:
    """One token per character of ``chars`` (printable ASCII by default), plus pad, eos and unk.

    A BPE model without merges splits any text into single characters; characters outside the vocabulary map to
    ``<unk>``. Decoding fuses the characters back, so ``decode(encode(text)) == text`` for in-vocabulary text.
    """
    vocab = {tok: i for i, tok in enumerate([PAD, EOS, UNK, *dict.fromkeys(chars)])}
    return _wrap(Tokenizer(BPE(vocab=vocab, merges=[], unk_token=UNK)))


def build_world_tokenizer(texts: Iterable[str], chars: str = CHARS) -> PreTrainedTokenizerFast:
    """BPE over the pieces of ``WORLD_PIECES``, merges learned on ``texts`` until every piece is one token.

    Ids 0, 1, 2 are pad, eos and unk, then the characters of ``chars``, then the merged words. Deterministic given
    ``texts``; ``decode(encode(text)) == text`` for any text made of ``chars``.
    """
    tok = Tokenizer(BPE(unk_token=UNK))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(WORLD_PIECES), behavior="isolated")
    trainer = BpeTrainer(
        vocab_size=100_000,
        special_tokens=[PAD, EOS, UNK],
        initial_alphabet=list(dict.fromkeys(chars)),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer)
    return _wrap(tok)
