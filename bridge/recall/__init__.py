"""Recall: everything said, searchable per tenant (index, import, search, the recall tool)."""
