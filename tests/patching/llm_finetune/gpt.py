import torch


class TinyGPT(torch.nn.Module):
    def __init__(self, vocab_size=50, emb_dim=16, context_length=8):
        super().__init__()
        self.tok_emb = torch.nn.Embedding(vocab_size, emb_dim)
        self.pos_emb = torch.nn.Embedding(context_length, emb_dim)
        self.block = torch.nn.Sequential(torch.nn.Linear(emb_dim, emb_dim), torch.nn.GELU())
        self.out_head = torch.nn.Linear(emb_dim, vocab_size, bias=False)

    def forward(self, idx):
        positions = torch.arange(idx.shape[1], device=idx.device)
        hidden = self.block(self.tok_emb(idx) + self.pos_emb(positions))
        return self.out_head(hidden)
