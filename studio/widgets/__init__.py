"""Reusable Qt widgets of the studio: cards, charts, forms, tables, diff views."""
