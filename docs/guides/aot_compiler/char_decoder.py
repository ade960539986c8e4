"""A one-block language model with a static key/value cache: one ``forward`` for prefill and decode."""

import torch
import torch.nn.functional as F

# Read by the AOT compiler: this file's factories return decoders, called as
# model(tokens, input_pos), whose caches hold this many positions.
DECODER_CONTEXT = 32


class CharDecoder(torch.nn.Module):
    def __init__(self, vocab: int = 128, dim: int = 64, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.embed = torch.nn.Embedding(vocab, dim)
        self.position = torch.nn.Embedding(DECODER_CONTEXT, dim)
        self.qkv = torch.nn.Linear(dim, 3 * dim, bias=False)
        self.out = torch.nn.Linear(dim, dim, bias=False)
        self.ffn = torch.nn.Sequential(
            torch.nn.Linear(dim, 4 * dim),
            torch.nn.GELU(),
            torch.nn.Linear(4 * dim, dim),
        )
        self.head = torch.nn.Linear(dim, vocab, bias=False)
        cache_shape = (1, heads, DECODER_CONTEXT, dim // heads)
        self.register_buffer("k_cache", torch.zeros(cache_shape), persistent=False)
        self.register_buffer("v_cache", torch.zeros(cache_shape), persistent=False)
        mask = torch.full((DECODER_CONTEXT, DECODER_CONTEXT), float("-inf")).triu(1)
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, tokens: torch.Tensor, input_pos: torch.Tensor) -> torch.Tensor:
        length = tokens.shape[1]
        start = input_pos[0].item()  # the position of the first token
        torch._check(start >= 0)
        torch._check(start + length <= DECODER_CONTEXT)
        positions = torch.arange(length) + start
        x = self.embed(tokens) + self.position(positions)
        q, k, v = (
            t.reshape(1, length, self.heads, -1).transpose(1, 2)
            for t in self.qkv(x).chunk(3, dim=-1)
        )
        self.k_cache.index_copy_(2, positions, k)  # the cache keeps the keys and values
        self.v_cache.index_copy_(2, positions, v)  # of every position so far
        mask = self.mask.narrow(0, start, length)
        y = F.scaled_dot_product_attention(
            q, self.k_cache, self.v_cache, attn_mask=mask
        )
        x = x + self.out(y.transpose(1, 2).reshape(1, length, -1))
        return self.head(x + self.ffn(x))


def build():
    """The factory: the model and a prompt of 8 tokens at position 0."""
    torch.manual_seed(0)
    return CharDecoder().eval(), (torch.randint(0, 128, (1, 8)), torch.tensor([0]))
