"""Senses: what comes with a message besides text (voice, photos, documents), made
ready for the turn, and what goes back besides text (speech)."""
