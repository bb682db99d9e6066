"""What one turn sends beside its text (image parts), and what it learns from that.

Images are learned like tools (newt.agent.turn.model_facts): a backend that
refuses an image part is remembered per (base_url, model) with its own words,
the turn fails with an explanation (its words stay stored and go back into the
prompt) and the next `@image` for that model is refused before anything is
sent. A backend that answered a turn with an image is remembered as taking them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from newt.backend.errors import ImagesUnsupportedError
from newt.store.image_support import ImageSupportRepo


@dataclass
class TurnAttachments:
    repo: ImageSupportRepo
    base_url: str
    model: str
    image_parts: list[dict[str, Any]] = field(default_factory=list)
    image_tokens: int = 0
    known: bool | None = None
    refused: str = ""  # the server's words when it refused an image

    def user_content(self, text: str) -> str | list[dict[str, Any]]:
        """The new message's content: plain text, or text and image parts."""
        if not self.image_parts:
            return text
        return [{"type": "text", "text": text}, *self.image_parts]

    async def rejected(self, exc: ImagesUnsupportedError) -> str:
        """Remember the refusal; the message the user sees."""
        await self.repo.put(self.base_url, self.model, False, exc.detail)
        self.known, self.refused = False, exc.detail
        return (
            f"{self.model} does not accept images (the server said: {exc.detail or exc.message}). "
            "newt remembers this for this model and will not send it images again; "
            "your prompt is back in the bar: remove the @image to send the rest."
        )

    async def accepted(self) -> None:
        if self.image_parts and self.known is not True:
            await self.repo.put(self.base_url, self.model, True)
            self.known = True
