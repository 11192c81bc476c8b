"""The order desk's shop: a fixed catalogue, orders, parcels and policies (no I/O, no clock).

Dates are fixed strings so every run sees the same world; the tools read these tables and
never change them (a started return is computed, not stored), so episodes can run in parallel.
"""

from __future__ import annotations

from typing import Any

BOOKS: tuple[dict[str, Any], ...] = (
    {
        "isbn": "9780141439518",
        "title": "Pride and Prejudice",
        "author": "Jane Austen",
        "price": 8.99,
        "format": "paperback",
        "in_stock": True,
    },
    {
        "isbn": "9780141036144",
        "title": "Nineteen Eighty-Four",
        "author": "George Orwell",
        "price": 9.99,
        "format": "paperback",
        "in_stock": True,
    },
    {
        "isbn": "9780007525546",
        "title": "The Hobbit",
        "author": "J. R. R. Tolkien",
        "price": 12.49,
        "format": "hardback",
        "in_stock": False,
    },
    {
        "isbn": "9780099590088",
        "title": "Sapiens",
        "author": "Yuval Noah Harari",
        "price": 14.99,
        "format": "paperback",
        "in_stock": True,
    },
    {
        "isbn": "9780241950425",
        "title": "The Road",
        "author": "Cormac McCarthy",
        "price": 10.99,
        "format": "paperback",
        "in_stock": True,
    },
    {
        "isbn": "9781529111101",
        "title": "Project Hail Mary",
        "author": "Andy Weir",
        "price": 18.99,
        "format": "hardback",
        "in_stock": True,
    },
    {
        "isbn": "9780571334650",
        "title": "Klara and the Sun",
        "author": "Kazuo Ishiguro",
        "price": 16.99,
        "format": "hardback",
        "in_stock": False,
    },
    {
        "isbn": "9780552779777",
        "title": "The Book Thief",
        "author": "Markus Zusak",
        "price": 9.49,
        "format": "paperback",
        "in_stock": True,
    },
    {
        "isbn": "9780141182803",
        "title": "Brave New World",
        "author": "Aldous Huxley",
        "price": 8.49,
        "format": "paperback",
        "in_stock": True,
    },
    {
        "isbn": "9781784162122",
        "title": "The Martian",
        "author": "Andy Weir",
        "price": 9.99,
        "format": "paperback",
        "in_stock": True,
    },
)

ORDERS: dict[str, dict[str, Any]] = {
    "PT-1041": {
        "status": "delivered",
        "placed_on": "2026-10-02",
        "delivered_on": "2026-10-06",
        "tracking_no": "RM482910GB",
        "items": [("9780141439518", 1), ("9780141182803", 1)],
    },
    "PT-1042": {
        "status": "shipped",
        "placed_on": "2026-10-20",
        "delivered_on": None,
        "tracking_no": "RM503377GB",
        "items": [("9781529111101", 1)],
    },
    "PT-1043": {
        "status": "processing",
        "placed_on": "2026-10-27",
        "delivered_on": None,
        "tracking_no": None,
        "items": [("9780099590088", 2)],
    },
    "PT-1044": {
        "status": "delivered",
        "placed_on": "2026-09-12",
        "delivered_on": "2026-09-15",
        "tracking_no": "RM447120GB",
        "items": [("9780241950425", 1), ("9780552779777", 1)],
    },
    "PT-1045": {
        "status": "shipped",
        "placed_on": "2026-10-24",
        "delivered_on": None,
        "tracking_no": "RM511864GB",
        "items": [("9781784162122", 3)],
    },
    "PT-1046": {
        "status": "cancelled",
        "placed_on": "2026-10-11",
        "delivered_on": None,
        "tracking_no": None,
        "items": [("9780007525546", 1)],
    },
    "PT-1047": {
        "status": "delivered",
        "placed_on": "2026-10-18",
        "delivered_on": "2026-10-23",
        "tracking_no": "RM498005GB",
        "items": [("9780141036144", 1)],
    },
    "PT-1048": {
        "status": "shipped",
        "placed_on": "2026-10-26",
        "delivered_on": None,
        "tracking_no": "RM520442GB",
        "items": [("9780571334650", 1), ("9780141439518", 2)],
    },
}

PARCELS: dict[str, dict[str, Any]] = {
    "RM482910GB": {
        "status": "delivered",
        "last_scan": "Delivered to the front door, 2026-10-06 11:42",
        "eta": None,
    },
    "RM503377GB": {
        "status": "in transit",
        "last_scan": "At the Leeds mail centre, 2026-10-22 06:10",
        "eta": "2026-10-24",
    },
    "RM447120GB": {
        "status": "delivered",
        "last_scan": "Signed for by A. Khan, 2026-09-15 14:03",
        "eta": None,
    },
    "RM511864GB": {
        "status": "delayed",
        "last_scan": "Held at the Bristol depot (address check), 2026-10-27 09:55",
        "eta": "2026-10-30",
    },
    "RM498005GB": {
        "status": "delivered",
        "last_scan": "Left with a neighbour at number 12, 2026-10-23 16:20",
        "eta": None,
    },
    "RM520442GB": {
        "status": "in transit",
        "last_scan": "Collected from the Pageturn warehouse, 2026-10-27 18:31",
        "eta": "2026-10-29",
    },
}

POLICIES: dict[str, dict[str, Any]] = {
    "returns": {
        "window_days": 30,
        "text": "Books can be returned within 30 days of delivery if unread and undamaged. "
        "Start a return from the order; we email a free returns label.",
    },
    "refunds": {
        "window_days": 5,
        "text": "Refunds go back to the original payment method within 5 working days of the "
        "return reaching our warehouse.",
    },
    "shipping": {
        "window_days": 3,
        "text": "Standard delivery takes 3 working days and is free on orders over 25.00 GBP; "
        "otherwise it costs 2.99 GBP.",
    },
    "damaged": {
        "window_days": 14,
        "text": "A book that arrives damaged is replaced or refunded in full: report it within "
        "14 days of delivery with a photo. No need to send it back.",
    },
}

CURRENCY = "GBP"


def book(isbn: str) -> dict[str, Any]:
    return next(b for b in BOOKS if b["isbn"] == isbn)
