"""Whose lines answer a message: a user asking about themselves is answered
from their own words (docs/design.md section 7).

`about_the_user(message)`: the message speaks of the user (I, my, we, our…)
and not of the assistant (you, your). For such a message recall carries no
line of the assistant's: what the user told about their life is in their own
lines, and the assistant's replies only echo it (an old city after the user
corrected it) or hold general advice (a meal plan, tips for a dive) whose
words meet the question's. A model copied that advice as the answer with the
user's own line beside it (docs/benchmarks.md). A message that names the
assistant ("what did you suggest?", "your plan") still gets its replies.
"""

from __future__ import annotations

import re

from newt.recall.pieces import SELF

# The user is pieces.SELF (I, my, we, our; "me" and "us" are not in it:
# "remind me", "tell us" ask something of the assistant).
_ASSISTANT = re.compile(r"\b(?:you|your|yours|yourself|you're|you've|you'd|you'll)\b", re.I)


def about_the_user(message: str) -> bool:
    """Whether `message` speaks of the user and not of the assistant."""
    text = message.replace("\u2019", "'")
    return SELF.search(text) is not None and _ASSISTANT.search(text) is None
