"""The UI's session double, one small fake per part (newt.ui.session_api).

Each module here fakes one Protocol the UI asks of a session part (FakeTurns is a
TurnsApi, FakeConversations a ConversationsApi, ...), and mypy checks each fit in
the module itself. What the parts share is one FakeState (state.py), handed to
each part explicitly; tests/support/fake_session.py composes them into the
FakeSession the UI tests open. Split by part so a test (or a reader) sees which
part owns what it scripts or checks, as ChatSession's parts do.
"""
