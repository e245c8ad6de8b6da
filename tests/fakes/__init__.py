"""Fakes of remote services that speak the real protocols, on 127.0.0.1."""
