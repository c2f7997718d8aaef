"""What a codemod's rewrite needs from PyTorch, by codemod id.

Kept apart from the codemods so that the card `fixer explain` and `fixer show` print, and the site,
can say it without loading LibCST; `fixer.patching.torch_versions` checks it against the project.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Need:
    """The first torch release that has `api`, which the rewrite writes into the user's code."""

    since: str
    api: str

    @property
    def text(self) -> str:
        return f"torch>={self.since} ({self.api})"


NEEDS: dict[str, Need] = {
    # pytorch/pytorch#133660 added the pass; the public torch.export.passes module ships it from 2.5.
    "exported-program-move-to-device-pass": Need("2.5", "torch.export.passes.move_to_device_pass"),
    # register_buffer's persistent= argument arrived in 1.6.
    "tensor-attribute-to-buffer": Need("1.6", "register_buffer(..., persistent=...)"),
}
