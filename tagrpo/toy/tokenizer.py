"""A character-level tokenizer built locally with ``tokenizers`` and saved in Hugging Face format."""

from __future__ import annotations

import string

from tokenizers import Tokenizer, decoders
from tokenizers.models import BPE
from transformers import PreTrainedTokenizerFast

PAD, EOS, UNK = "<pad>", "<eos>", "<unk>"
CHARS = "".join(sorted(set(string.printable) - set("\r\x0b\x0c")))


def build_char_tokenizer(chars: str = CHARS) -> PreTrainedTokenizerFast:
    """One token per character of ``chars`` (printable ASCII by default), plus pad, eos and unk.

    A BPE model without merges splits any text into single characters; characters outside the vocabulary map to
    ``<unk>``. Decoding fuses the characters back, so ``decode(encode(text)) == text`` for in-vocabulary text.
    """
    vocab = {tok: i for i, tok in enumerate([PAD, EOS, UNK, *dict.fromkeys(chars)])}
    model = BPE(vocab=vocab, merges=[], unk_token=UNK)
    tok = Tokenizer(model)
    tok.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token=PAD, eos_token=EOS, unk_token=UNK, padding_side="left"
    )
