"""newt's Textual UI: the only package that imports textual.

Everything here talks to the agent session (newt.agent.session.chat_session.ChatSession);
no memory, recall or network logic lives in the UI.
"""
