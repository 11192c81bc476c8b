"""Build the demo live-room catalog: resources/catalog/catalog.json.

Deterministic: curated products (names, brands, specs, colours, sizes) plus a seeded random
generator for what varies in a real room (link numbers, prices, stock, coupons, shipping). Run
it again with the same seed and you get the same bytes:

    python scripts/build_catalog.py            # writes resources/catalog/catalog.json
    python scripts/build_catalog.py --check    # exit 1 if the committed file is stale

The show runs over a weekend (see SHOW_START / SHOW_END); coupon expiries are spread before,
during and after it, so whether a coupon is valid depends on the room clock of each task.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.sim.models import Catalog  # noqa: E402

OUT = ROOT / "resources" / "catalog" / "catalog.json"
SEED = 20250613

SHOW_START = "2025-06-13T19:00:00+00:00"
SHOW_END = "2025-06-15T23:00:00+00:00"
# Coupon expiries: before the show (always expired), during it (depends on the clock), after it.
EXPIRED_AT = ["2025-06-08T23:59:59+00:00", "2025-06-12T23:59:59+00:00"]
DURING_SHOW = [
    "2025-06-13T22:00:00+00:00",
    "2025-06-14T12:00:00+00:00",
    "2025-06-14T21:00:00+00:00",
    "2025-06-15T18:00:00+00:00",
]
VALID_UNTIL = [
    "2025-06-20T23:59:59+00:00",
    "2025-06-30T23:59:59+00:00",
    "2025-07-15T23:59:59+00:00",
]

REGIONS = [
    "California",
    "Texas",
    "New York",
    "Florida",
    "Illinois",
    "Washington",
    "Alaska",
    "Hawaii",
    "Canada",
]
WAREHOUSES = {"Reno, NV": "west", "Columbus, OH": "east", "Dallas, TX": "south"}
# Base transit days by (warehouse zone, region).
TRANSIT = {
    "west": {"California": 1, "Washington": 2, "Texas": 3, "Illinois": 3, "New York": 4,
             "Florida": 4, "Alaska": 5, "Hawaii": 5, "Canada": 6},
    "east": {"California": 4, "Washington": 4, "Texas": 3, "Illinois": 1, "New York": 2,
             "Florida": 3, "Alaska": 6, "Hawaii": 7, "Canada": 5},
    "south": {"California": 3, "Washington": 4, "Texas": 1, "Illinois": 2, "New York": 3,
              "Florida": 2, "Alaska": 6, "Hawaii": 6, "Canada": 6},
}  # fmt: skip
FREE_SHIPPING_OVER = 49.0

APPAREL_TOPS = [
    # size, chest cm, length cm, height range, weight range
    ("XS", "82-86", "64", (150, 157), (40, 47)),
    ("S", "87-92", "67", (158, 164), (48, 55)),
    ("M", "93-98", "70", (165, 171), (56, 64)),
    ("L", "99-105", "72", (172, 178), (65, 74)),
    ("XL", "106-112", "74", (179, 185), (75, 86)),
    ("XXL", "113-120", "76", (186, 193), (87, 100)),
]
APPAREL_BOTTOMS = [
    # size, waist cm, hip cm, height range, weight range
    ("XS", "60-64", "84-88", (150, 157), (40, 47)),
    ("S", "65-69", "89-93", (158, 164), (48, 55)),
    ("M", "70-75", "94-99", (165, 171), (56, 64)),
    ("L", "76-82", "100-105", (172, 178), (65, 74)),
    ("XL", "83-90", "106-112", (179, 185), (75, 86)),
    ("XXL", "91-98", "113-120", (186, 193), (87, 100)),
]
SHOE_SIZES = [
    ("36", "22.5", "5.5"), ("37", "23.5", "6.5"), ("38", "24.0", "7.5"), ("39", "25.0", "8"),
    ("40", "25.5", "8.5"), ("41", "26.5", "9.5"), ("42", "27.0", "10"), ("43", "28.0", "11"),
    ("44", "28.5", "11.5"), ("45", "29.5", "12"),
]  # fmt: skip
BEDDING = [
    ("Twin", "173 x 218 cm"),
    ("Queen", "228 x 228 cm"),
    ("King", "264 x 228 cm"),
]


@dataclass
class Item:
    name: str
    brand: str
    price: float
    colors: list[str]
    specs: dict[str, str]
    keywords: list[str]
    sizes: str = "one"  # one | tops | bottoms | shoes | bedding
    size_range: tuple[int, int] = (0, 99)  # slice of the size table
    extra: dict[str, Any] = field(default_factory=dict)


APPAREL = [
    Item(
        "Classic Cotton Crew Tee",
        "Luma Basics",
        19.9,
        ["white", "black", "heather grey", "navy"],
        {
            "material": "100% combed cotton, 180 gsm",
            "fit": "true to size",
            "care": "machine wash cold, tumble dry low",
            "neckline": "crew neck",
        },
        ["t-shirt", "tee", "cotton", "basic", "top"],
        "tops",
    ),
    Item(
        "Oversized Fleece Hoodie",
        "Luma",
        49.9,
        ["black", "oatmeal", "sage green"],
        {
            "material": "80% cotton, 20% polyester brushed fleece, 340 gsm",
            "fit": "oversized",
            "care": "machine wash cold, do not bleach",
            "pockets": "kangaroo pocket",
        },
        ["hoodie", "sweatshirt", "fleece", "oversized", "warm", "top"],
        "tops",
    ),
    Item(
        "Linen Button-Down Shirt",
        "Kinfolk & Co",
        45.0,
        ["white", "sand", "sky blue"],
        {
            "material": "100% European flax linen",
            "fit": "relaxed, size down for a closer fit",
            "care": "machine wash gentle, line dry",
            "sleeve": "long sleeve, roll-up tabs",
        },
        ["shirt", "linen", "summer", "button", "top"],
        "tops",
        (1, 5),
    ),
    Item(
        "High-Rise Straight Jeans",
        "Northpeak Denim",
        59.0,
        ["indigo", "light wash", "black"],
        {
            "material": "98% cotton, 2% elastane stretch denim",
            "fit": "runs small, size up",
            "rise": "high rise, 29 cm",
            "inseam": "76 cm",
        },
        ["jeans", "denim", "pants", "straight", "trousers"],
        "bottoms",
        (0, 5),
    ),
    Item(
        "Ribbed Knit Cardigan",
        "Kinfolk & Co",
        54.0,
        ["cream", "dusty pink", "charcoal"],
        {
            "material": "55% cotton, 45% acrylic rib knit",
            "fit": "true to size",
            "care": "hand wash cold, dry flat",
            "closure": "horn-look buttons",
        },
        ["cardigan", "knit", "sweater", "layer", "top"],
        "tops",
        (0, 5),
    ),
    Item(
        "Lightweight Puffer Jacket",
        "Northpeak",
        89.0,
        ["black", "olive", "burgundy"],
        {
            "material": "100% recycled nylon shell, synthetic down fill",
            "fit": "true to size",
            "weight": "380 g",
            "water resistance": "water-repellent finish, not waterproof",
            "packable": "packs into its own pocket",
        },
        ["jacket", "puffer", "coat", "warm", "outerwear", "packable"],
        "tops",
    ),
    Item(
        "Pleated Midi Skirt",
        "Soleil",
        39.0,
        ["champagne", "black", "emerald"],
        {
            "material": "100% polyester satin",
            "fit": "true to size, elastic waist",
            "length": "78 cm",
            "lining": "fully lined",
        },
        ["skirt", "midi", "pleated", "satin", "party"],
        "bottoms",
        (0, 4),
    ),
    Item(
        "Relaxed Cargo Joggers",
        "Urbanroam",
        42.0,
        ["khaki", "black", "stone"],
        {
            "material": "97% cotton twill, 3% spandex",
            "fit": "relaxed, true to size",
            "pockets": "6 pockets incl. 2 cargo",
            "waist": "elastic with drawcord",
        },
        ["joggers", "cargo", "pants", "trousers", "casual"],
        "bottoms",
    ),
    Item(
        "Merino Wool Crewneck Sweater",
        "Northpeak",
        79.0,
        ["navy", "camel", "forest green"],
        {
            "material": "100% extra-fine merino wool, 18.5 micron",
            "fit": "true to size",
            "care": "hand wash or wool cycle, dry flat",
            "weight": "290 g",
        },
        ["sweater", "merino", "wool", "jumper", "knit", "top"],
        "tops",
        (1, 6),
    ),
    Item(
        "Seamless High-Waist Yoga Leggings",
        "Stride Lab",
        34.0,
        ["black", "plum", "slate blue"],
        {
            "material": "78% nylon, 22% spandex",
            "fit": "compressive, true to size",
            "inseam": "64 cm (7/8 length)",
            "feature": "squat-proof, hidden waist pocket",
        },
        ["leggings", "yoga", "gym", "workout", "pants", "activewear"],
        "bottoms",
        (0, 5),
    ),
    Item(
        "Waterproof Rain Shell",
        "Northpeak",
        99.0,
        ["yellow", "navy", "black"],
        {
            "material": "2.5-layer recycled polyester, PFC-free coating",
            "waterproof rating": "10,000 mm",
            "fit": "true to size, room for a layer",
            "weight": "310 g",
            "hood": "adjustable, packs into collar",
        },
        ["rain jacket", "raincoat", "waterproof", "shell", "jacket", "outerwear"],
        "tops",
    ),
    Item(
        "Satin Slip Dress",
        "Soleil",
        64.0,
        ["black", "champagne", "cobalt"],
        {
            "material": "100% polyester satin",
            "fit": "runs small, size up if between sizes",
            "length": "115 cm midi",
            "straps": "adjustable",
        },
        ["dress", "slip dress", "satin", "party", "evening"],
        "tops",
        (0, 5),
    ),
]

SHOES = [
    Item(
        "Cloudstep Running Shoes",
        "Stride Lab",
        89.0,
        ["white/grey", "black", "coral"],
        {
            "upper": "engineered mesh",
            "sole": "EVA foam midsole, rubber outsole",
            "drop": "8 mm",
            "weight": "255 g (size 42)",
            "fit": "true to size",
        },
        ["running shoes", "sneakers", "trainers", "run", "sport"],
        "shoes",
    ),
    Item(
        "Canvas Low-Top Sneakers",
        "Urbanroam",
        39.0,
        ["white", "black", "red"],
        {
            "upper": "12 oz cotton canvas",
            "sole": "vulcanised rubber",
            "fit": "runs large, size down half a size",
            "insole": "removable cushioned insole",
        },
        ["sneakers", "canvas", "casual shoes", "low top"],
        "shoes",
    ),
    Item(
        "Leather Chelsea Boots",
        "Kinfolk & Co",
        129.0,
        ["black", "chestnut"],
        {
            "upper": "full-grain leather",
            "sole": "stitched rubber sole",
            "fit": "true to size",
            "shaft height": "14 cm",
            "lining": "leather lining",
        },
        ["boots", "chelsea", "leather", "ankle boots"],
        "shoes",
        (1, 10),
    ),
    Item(
        "Trail Hiking Boots",
        "Northpeak",
        119.0,
        ["brown", "grey/orange"],
        {
            "upper": "suede and ripstop nylon",
            "waterproofing": "waterproof membrane",
            "sole": "lugged rubber outsole, 5 mm lugs",
            "weight": "540 g (size 42)",
            "fit": "true to size, room for thick socks",
        },
        ["hiking boots", "boots", "trail", "outdoor", "waterproof"],
        "shoes",
        (2, 10),
    ),
    Item(
        "Memory Foam Slides",
        "Luma Basics",
        24.0,
        ["black", "sand", "lilac"],
        {
            "upper": "EVA strap",
            "footbed": "contoured memory foam",
            "fit": "true to size",
            "water friendly": "yes, quick drying",
        },
        ["slides", "sandals", "slippers", "summer"],
        "shoes",
        (0, 9),
    ),
    Item(
        "Classic Penny Loafers",
        "Kinfolk & Co",
        98.0,
        ["black", "cognac"],
        {
            "upper": "polished calf leather",
            "sole": "leather sole with rubber heel",
            "fit": "runs small, size up half a size",
            "lining": "leather",
        },
        ["loafers", "leather", "office", "dress shoes"],
        "shoes",
        (1, 9),
    ),
    Item(
        "Platform Strap Sandals",
        "Soleil",
        49.0,
        ["black", "tan", "white"],
        {
            "upper": "vegan leather straps",
            "sole": "4 cm EVA platform",
            "fit": "true to size",
            "closure": "adjustable ankle buckle",
        },
        ["sandals", "platform", "summer", "strappy"],
        "shoes",
        (0, 7),
    ),
    Item(
        "Knit Slip-On Trainers",
        "Stride Lab",
        59.0,
        ["charcoal", "navy", "oat"],
        {
            "upper": "stretch knit",
            "sole": "lightweight foam",
            "weight": "190 g (size 42)",
            "fit": "snug, size up if between sizes",
            "washable": "machine washable at 30 C",
        },
        ["slip-on", "sneakers", "trainers", "knit", "walking"],
        "shoes",
    ),
    Item(
        "Waterproof Snow Boots",
        "Northpeak",
        109.0,
        ["black", "taupe"],
        {
            "upper": "waterproof nylon and suede",
            "lining": "faux fur, rated to -25 C",
            "sole": "anti-slip rubber",
            "shaft height": "22 cm",
            "fit": "true to size",
        },
        ["snow boots", "winter boots", "boots", "warm", "waterproof"],
        "shoes",
        (0, 9),
    ),
    Item(
        "Court Tennis Shoes",
        "Stride Lab",
        74.0,
        ["white/green", "white/navy"],
        {
            "upper": "synthetic leather",
            "sole": "herringbone non-marking outsole",
            "fit": "true to size",
            "weight": "340 g (size 42)",
        },
        ["tennis shoes", "court", "sneakers", "sport"],
        "shoes",
        (2, 10),
    ),
]

BAGS = [
    Item(
        "Everyday Leather Tote",
        "Kinfolk & Co",
        119.0,
        ["black", "tan", "burgundy"],
        {
            "material": "pebbled cowhide leather",
            "dimensions": "38 x 30 x 14 cm",
            "strap drop": "24 cm",
            "laptop": "fits up to 14-inch laptop",
            "closure": "magnetic snap",
        },
        ["tote", "bag", "leather", "work bag", "handbag"],
    ),
    Item(
        "Nylon Crossbody Bag",
        "Urbanroam",
        36.0,
        ["black", "olive", "lavender"],
        {
            "material": "water-resistant recycled nylon",
            "dimensions": "24 x 16 x 7 cm",
            "strap": "adjustable, 70-130 cm",
            "weight": "210 g",
        },
        ["crossbody", "bag", "sling", "travel", "nylon"],
    ),
    Item(
        "Commuter Laptop Backpack",
        "Urbanroam",
        69.0,
        ["black", "grey", "navy"],
        {
            "material": "600D polyester, water-resistant",
            "capacity": "22 L",
            "laptop": "padded sleeve for 15.6-inch laptops",
            "dimensions": "46 x 31 x 16 cm",
            "weight": "850 g",
            "usb port": "external USB charging port (cable inside)",
        },
        ["backpack", "laptop bag", "school", "commute", "travel"],
    ),
    Item(
        "Mini Quilted Shoulder Bag",
        "Soleil",
        58.0,
        ["black", "cream", "baby pink"],
        {
            "material": "quilted vegan leather",
            "dimensions": "20 x 13 x 6 cm",
            "strap": "gold-tone chain, 55 cm drop",
            "closure": "turn lock",
        },
        ["shoulder bag", "mini bag", "bag", "quilted", "party"],
    ),
    Item(
        "Polarized Aviator Sunglasses",
        "Soleil",
        45.0,
        ["gold/green", "silver/grey", "black"],
        {
            "lens": "polarized, UV400",
            "frame": "lightweight metal",
            "lens width": "58 mm",
            "includes": "hard case and cleaning cloth",
        },
        ["sunglasses", "aviator", "shades", "polarized", "summer"],
    ),
    Item(
        "Silk Square Scarf",
        "Kinfolk & Co",
        48.0,
        ["floral blue", "leopard", "terracotta"],
        {
            "material": "100% mulberry silk twill, 16 momme",
            "dimensions": "70 x 70 cm",
            "edges": "hand-rolled",
            "care": "dry clean or hand wash cold",
        },
        ["scarf", "silk", "bandana", "accessory", "gift"],
    ),
    Item(
        "Slim Leather Card Wallet",
        "Luma",
        29.0,
        ["black", "brown", "navy"],
        {
            "material": "vegetable-tanned leather",
            "capacity": "6 cards plus notes",
            "dimensions": "10.5 x 7.5 cm",
            "rfid": "RFID-blocking lining",
        },
        ["wallet", "card holder", "leather", "gift", "minimalist"],
    ),
    Item(
        "Canvas Weekender Duffel",
        "Northpeak",
        89.0,
        ["olive", "navy", "sand"],
        {
            "material": "waxed cotton canvas with leather trim",
            "capacity": "40 L",
            "dimensions": "52 x 28 x 27 cm",
            "carry-on": "fits most airline overhead bins",
            "weight": "1.3 kg",
        },
        ["duffel", "weekender", "travel bag", "gym bag", "canvas"],
    ),
    Item(
        "Minimalist Steel Watch",
        "Luma",
        129.0,
        ["silver/white", "black", "gold/green"],
        {
            "case": "38 mm stainless steel",
            "movement": "Japanese quartz",
            "water resistance": "5 ATM (splash and swim, no diving)",
            "strap": "20 mm mesh strap",
            "battery life": "about 3 years",
        },
        ["watch", "wristwatch", "steel", "gift", "minimalist"],
    ),
    Item(
        "Chunky Wool Beanie",
        "Northpeak",
        24.0,
        ["charcoal", "mustard", "cream", "red"],
        {
            "material": "50% wool, 50% acrylic",
            "fit": "one size, stretchy rib knit",
            "care": "hand wash cold",
        },
        ["beanie", "hat", "winter hat", "wool", "knit"],
    ),
]

BEAUTY = [
    Item(
        "Hydrating Hyaluronic Acid Serum",
        "Verdant Skin",
        24.0,
        ["30 ml"],
        {
            "volume": "30 ml",
            "key ingredients": "hyaluronic acid (3 weights), panthenol",
            "skin type": "all skin types",
            "fragrance": "fragrance-free",
            "shelf life": "12 months after opening",
        },
        ["serum", "hyaluronic", "hydrating", "skincare", "moisture"],
    ),
    Item(
        "Vitamin C Brightening Serum",
        "Verdant Skin",
        32.0,
        ["30 ml"],
        {
            "volume": "30 ml",
            "key ingredients": "15% L-ascorbic acid, vitamin E, ferulic acid",
            "skin type": "normal to oily",
            "use": "mornings, before sunscreen",
            "shelf life": "6 months after opening",
        },
        ["serum", "vitamin c", "brightening", "skincare", "glow"],
    ),
    Item(
        "Gentle Foaming Cleanser",
        "Petal Lab",
        16.0,
        ["150 ml"],
        {
            "volume": "150 ml",
            "key ingredients": "amino-acid surfactants, green tea extract",
            "skin type": "sensitive and combination",
            "ph": "5.5",
            "shelf life": "12 months after opening",
        },
        ["cleanser", "face wash", "foaming", "skincare", "gentle"],
    ),
    Item(
        "Daily Mineral Sunscreen SPF 50",
        "Petal Lab",
        22.0,
        ["50 ml"],
        {
            "volume": "50 ml",
            "protection": "SPF 50, broad spectrum",
            "key ingredients": "zinc oxide 20%",
            "finish": "sheer, no white cast",
            "water resistance": "water resistant up to 40 minutes",
        },
        ["sunscreen", "spf", "sun cream", "mineral", "skincare"],
    ),
    Item(
        "Velvet Matte Liquid Lipstick",
        "Petal Lab",
        18.0,
        ["rosewood", "brick red", "mauve", "classic red", "nude beige"],
        {
            "volume": "5 ml",
            "finish": "velvet matte",
            "wear": "up to 8 hours",
            "key ingredients": "jojoba oil, vitamin E",
            "vegan": "yes, cruelty-free",
        },
        ["lipstick", "matte", "lip", "makeup", "liquid lipstick"],
    ),
    Item(
        "Volumizing Tubing Mascara",
        "Petal Lab",
        15.0,
        ["jet black", "brown"],
        {
            "volume": "8 ml",
            "formula": "tubing, smudge-proof",
            "removal": "warm water",
            "shelf life": "6 months after opening",
        },
        ["mascara", "lashes", "makeup", "volume"],
    ),
    Item(
        "Overnight Repair Night Cream",
        "Verdant Skin",
        38.0,
        ["50 ml"],
        {
            "volume": "50 ml",
            "key ingredients": "ceramides, 0.2% retinal, squalane",
            "skin type": "normal to dry",
            "use": "evenings only; use sunscreen during the day",
            "shelf life": "6 months after opening",
        },
        ["night cream", "moisturizer", "retinal", "skincare", "anti-aging"],
    ),
    Item(
        "Tinted Lip Balm Trio",
        "Luma Beauty",
        14.0,
        ["berry set", "coral set", "nude set"],
        {
            "volume": "3 x 4 g",
            "key ingredients": "shea butter, vitamin E",
            "spf": "SPF 15",
            "finish": "sheer tint",
        },
        ["lip balm", "tinted", "lip", "gift set", "spf"],
    ),
    Item(
        "Pure Argan Hair Oil",
        "Verdant Skin",
        21.0,
        ["100 ml"],
        {
            "volume": "100 ml",
            "key ingredients": "cold-pressed argan oil, vitamin E",
            "hair type": "dry and frizzy hair",
            "scent": "light amber",
        },
        ["hair oil", "argan", "haircare", "frizz", "shine"],
    ),
    Item(
        "Kaolin Clay Detox Mask",
        "Petal Lab",
        19.0,
        ["100 g"],
        {
            "volume": "100 g",
            "key ingredients": "kaolin and bentonite clay, niacinamide",
            "skin type": "oily and combination",
            "use": "1-2 times a week, 10 minutes",
        },
        ["face mask", "clay mask", "detox", "skincare", "pores"],
    ),
    Item(
        "Cushion Foundation SPF 30",
        "Luma Beauty",
        29.0,
        ["fair 10", "light 20", "medium 30", "tan 40", "deep 50"],
        {
            "volume": "15 g plus refill",
            "coverage": "medium, buildable",
            "spf": "SPF 30",
            "finish": "natural dewy",
            "wear": "up to 12 hours",
        },
        ["foundation", "cushion", "makeup", "spf", "base"],
    ),
]

ELECTRONICS = [
    Item(
        "Wireless Noise-Cancelling Headphones",
        "Arden Audio",
        149.0,
        ["black", "silver", "midnight blue"],
        {
            "battery life": "40 h (30 h with ANC on)",
            "bluetooth": "5.3, multipoint",
            "noise cancelling": "hybrid ANC",
            "charging": "USB-C, 10 min gives 5 h",
            "weight": "250 g",
        },
        ["headphones", "noise cancelling", "anc", "wireless", "over-ear", "audio"],
    ),
    Item(
        "True Wireless Earbuds Pro",
        "Arden Audio",
        79.0,
        ["white", "black", "sage"],
        {
            "battery life": "8 h per charge, 32 h with case",
            "bluetooth": "5.3",
            "water resistance": "IPX5 sweat and splash resistant",
            "noise cancelling": "ANC with transparency mode",
            "charging": "USB-C and wireless",
        },
        ["earbuds", "wireless earbuds", "earphones", "anc", "audio", "tws"],
    ),
    Item(
        "Portable Bluetooth Speaker",
        "Arden Audio",
        59.0,
        ["black", "teal", "coral"],
        {
            "battery life": "16 h",
            "output": "20 W stereo",
            "water resistance": "IP67 waterproof",
            "bluetooth": "5.3, pair two speakers",
            "weight": "540 g",
        },
        ["speaker", "bluetooth speaker", "portable", "waterproof", "audio"],
    ),
    Item(
        "20000mAh Power Bank",
        "Voltra",
        45.0,
        ["black", "white"],
        {
            "capacity": "20000 mAh",
            "output": "65 W USB-C PD, charges laptops",
            "ports": "2 x USB-C, 1 x USB-A",
            "weight": "390 g",
            "flight safe": "yes, under 100 Wh (74 Wh)",
        },
        ["power bank", "battery", "charger", "portable charger", "travel"],
    ),
    Item(
        "Smart Fitness Band 5",
        "Voltra",
        49.0,
        ["black", "pink", "mint"],
        {
            "battery life": "14 days typical use",
            "display": "1.47-inch AMOLED",
            "water resistance": "5 ATM, swim-proof",
            "sensors": "heart rate, SpO2, sleep tracking",
            "compatibility": "iOS and Android",
        },
        ["fitness tracker", "smart band", "watch", "fitness", "health tracker"],
    ),
    Item(
        "65W GaN Fast Charger",
        "Voltra",
        35.0,
        ["white", "black"],
        {
            "output": "65 W max, 3 ports",
            "ports": "2 x USB-C, 1 x USB-A",
            "size": "about 30% smaller than a standard 65 W brick",
            "plug": "foldable US plug",
        },
        ["charger", "gan", "fast charger", "usb-c", "adapter"],
    ),
    Item(
        "Low-Profile Mechanical Keyboard",
        "Voltra",
        89.0,
        ["space grey", "white"],
        {
            "switches": "low-profile brown (tactile), hot-swappable",
            "layout": "75%, 84 keys",
            "connection": "Bluetooth 5.1, 2.4 GHz and USB-C",
            "battery life": "up to 200 h with backlight off",
            "backlight": "white LED",
        },
        ["keyboard", "mechanical keyboard", "wireless keyboard", "office", "typing"],
    ),
    Item(
        "Silent Wireless Mouse",
        "Voltra",
        25.0,
        ["graphite", "rose", "white"],
        {
            "connection": "Bluetooth and 2.4 GHz receiver",
            "dpi": "800-2400 adjustable",
            "battery life": "up to 18 months on one AA battery",
            "clicks": "silent switches",
        },
        ["mouse", "wireless mouse", "silent", "office", "computer"],
    ),
    Item(
        "4K Action Camera",
        "Voltra",
        139.0,
        ["black"],
        {
            "video": "4K at 60 fps, electronic stabilisation",
            "water resistance": "waterproof to 10 m without case, 40 m with case",
            "battery life": "about 90 min of 4K recording",
            "screens": "dual screens, front and back",
            "storage": "microSD up to 256 GB",
        },
        ["action camera", "camera", "4k", "vlog", "waterproof"],
    ),
    Item(
        "Smart LED Desk Lamp",
        "Hearth & Pine",
        54.0,
        ["white", "black"],
        {
            "brightness": "5 levels, up to 800 lumens",
            "color temperature": "2700-6500 K",
            "charging": "built-in 10 W wireless phone charger",
            "power": "USB-C adapter included",
        },
        ["desk lamp", "lamp", "led", "study", "office"],
    ),
    Item(
        "Mini Smart Projector",
        "Arden Audio",
        169.0,
        ["white", "grey"],
        {
            "resolution": "native 1080p, 4K input supported",
            "brightness": "350 ANSI lumens",
            "screen size": "40-120 inches",
            "apps": "built-in streaming apps",
            "speaker": "2 x 5 W",
        },
        ["projector", "mini projector", "movie", "home cinema", "1080p"],
    ),
]

HOME = [
    Item(
        "Stonewashed Linen Duvet Set",
        "Hearth & Pine",
        129.0,
        ["natural", "white", "sage"],
        {
            "material": "100% stonewashed French linen",
            "includes": "1 duvet cover, 2 pillowcases",
            "closure": "coconut-shell buttons",
            "care": "machine wash warm, tumble dry low",
        },
        ["duvet cover", "bedding", "linen", "sheets", "bed"],
        "bedding",
    ),
    Item(
        "Contour Memory Foam Pillow",
        "Hearth & Pine",
        39.0,
        ["white"],
        {
            "material": "memory foam core, bamboo viscose cover",
            "dimensions": "60 x 35 x 11 cm",
            "firmness": "medium firm",
            "care": "cover machine washable",
        },
        ["pillow", "memory foam", "sleep", "neck pillow", "bed"],
    ),
    Item(
        "Ceramic Pour-Over Coffee Set",
        "Hearth & Pine",
        42.0,
        ["matte white", "charcoal"],
        {
            "material": "stoneware ceramic",
            "includes": "dripper, 600 ml server, 2 cups",
            "capacity": "600 ml",
            "dishwasher safe": "yes",
        },
        ["coffee set", "pour over", "coffee", "dripper", "kitchen"],
    ),
    Item(
        "Pre-Seasoned Cast Iron Skillet 10-inch",
        "Hearth & Pine",
        34.0,
        ["black"],
        {
            "material": "cast iron, pre-seasoned with vegetable oil",
            "diameter": "26 cm",
            "weight": "2.4 kg",
            "compatibility": "gas, electric, induction, oven, campfire",
            "care": "hand wash, dry and oil lightly",
        },
        ["skillet", "cast iron", "pan", "frying pan", "cookware", "kitchen"],
    ),
    Item(
        "Glass Food Storage Set 10-piece",
        "Luma Home",
        36.0,
        ["clear/grey lids"],
        {
            "material": "borosilicate glass, BPA-free lids",
            "includes": "5 containers, 5 lids",
            "sizes": "370 ml to 1,040 ml",
            "oven safe": "glass to 230 C (lids not oven safe)",
        },
        ["food storage", "containers", "meal prep", "glass", "kitchen"],
    ),
    Item(
        "Ultrasonic Aroma Diffuser",
        "Luma Home",
        32.0,
        ["light wood", "white"],
        {
            "capacity": "300 ml",
            "run time": "up to 10 h",
            "light": "7 colour night light",
            "auto shut-off": "yes, when water runs out",
        },
        ["diffuser", "aroma", "essential oil", "humidifier", "bedroom"],
    ),
    Item(
        "Cooling Weighted Blanket",
        "Hearth & Pine",
        79.0,
        ["grey", "navy"],
        {
            "material": "cooling bamboo viscose cover, glass bead fill",
            "dimensions": "122 x 183 cm",
            "care": "cover machine washable",
            "weight note": "pick about 10% of body weight",
        },
        ["weighted blanket", "blanket", "sleep", "cooling", "bed"],
        "one",
        (0, 0),
        {"sizes": ["5 kg", "7 kg", "9 kg"]},
    ),
    Item(
        "Bamboo Bath Towel Set",
        "Hearth & Pine",
        49.0,
        ["white", "stone", "eucalyptus"],
        {
            "material": "70% bamboo viscose, 30% cotton, 600 gsm",
            "includes": "2 bath towels, 2 hand towels, 2 washcloths",
            "care": "machine wash warm, no fabric softener",
        },
        ["towels", "bath towel", "bamboo", "bathroom", "towel set"],
    ),
    Item(
        "Insulated Steel Water Bottle 750 ml",
        "Luma Home",
        27.0,
        ["matte black", "ocean blue", "blush", "white"],
        {
            "capacity": "750 ml",
            "insulation": "cold 24 h, hot 12 h",
            "material": "18/8 stainless steel",
            "lid": "leak-proof straw lid",
            "bpa free": "yes",
        },
        ["water bottle", "bottle", "insulated", "tumbler", "gym"],
    ),
    Item(
        "Ceramic Nonstick Frying Pan 28 cm",
        "Luma Home",
        39.0,
        ["cream", "sage", "black"],
        {
            "coating": "ceramic nonstick, PTFE and PFOA free",
            "diameter": "28 cm",
            "compatibility": "all hobs incl. induction",
            "oven safe": "to 200 C",
            "care": "hand wash recommended",
        },
        ["frying pan", "nonstick", "pan", "cookware", "kitchen"],
    ),
    Item(
        "Hand-Poured Soy Candle",
        "Luma Home",
        22.0,
        ["fig & cedar", "sea salt", "vanilla bean"],
        {
            "material": "100% soy wax, cotton wick",
            "burn time": "about 45 h",
            "size": "220 g",
            "vessel": "reusable amber glass jar",
        },
        ["candle", "soy candle", "scented", "gift", "home fragrance"],
    ),
]

FOOD = [
    Item(
        "Sea Salt Dark Chocolate Box",
        "Crumb Theory",
        18.0,
        ["70% dark", "85% dark"],
        {
            "net weight": "8 bars x 40 g (320 g)",
            "ingredients": "cocoa mass, cane sugar, cocoa butter, sea salt",
            "allergens": "may contain milk, nuts",
            "shelf life": "12 months",
            "storage": "cool and dry, below 20 C",
        },
        ["chocolate", "dark chocolate", "snack", "gift", "sweets"],
    ),
    Item(
        "Roasted Mixed Nuts Jar",
        "Crumb Theory",
        16.0,
        ["lightly salted", "unsalted"],
        {
            "net weight": "680 g",
            "ingredients": "almonds, cashews, pecans, hazelnuts, sea salt",
            "allergens": "tree nuts",
            "shelf life": "9 months",
            "storage": "reseal after opening",
        },
        ["nuts", "mixed nuts", "snack", "almonds", "protein"],
    ),
    Item(
        "Cold Brew Coffee Concentrate",
        "Crumb Theory",
        14.0,
        ["original", "vanilla"],
        {
            "net volume": "946 ml (makes 16 cups)",
            "ingredients": "water, arabica coffee",
            "caffeine": "about 120 mg per serving",
            "shelf life": "12 months unopened",
            "storage": "refrigerate after opening, use within 14 days",
        },
        ["coffee", "cold brew", "concentrate", "iced coffee", "drink"],
    ),
    Item(
        "Ceremonial Matcha Powder",
        "Crumb Theory",
        29.0,
        ["30 g tin"],
        {
            "net weight": "30 g",
            "origin": "Uji, Kyoto, Japan",
            "ingredients": "100% green tea",
            "shelf life": "12 months unopened",
            "storage": "refrigerate after opening",
        },
        ["matcha", "green tea", "tea", "latte", "powder"],
    ),
    Item(
        "Dried Mango Slices",
        "Crumb Theory",
        9.9,
        ["no sugar added", "chili lime"],
        {
            "net weight": "3 x 100 g",
            "ingredients": "mango (chili lime: chili, lime, salt)",
            "allergens": "none of the major allergens",
            "shelf life": "10 months",
        },
        ["dried mango", "dried fruit", "snack", "mango", "healthy snack"],
    ),
    Item(
        "Honey Butter Almonds",
        "Crumb Theory",
        12.0,
        ["honey butter"],
        {
            "net weight": "2 x 200 g",
            "ingredients": "almonds, sugar, butter, honey, salt",
            "allergens": "tree nuts, milk",
            "shelf life": "9 months",
        },
        ["almonds", "honey butter", "snack", "nuts", "sweet"],
    ),
    Item(
        "Instant Ramen Variety Pack",
        "Noodle House",
        19.0,
        ["variety 12-pack"],
        {
            "net weight": "12 x 110 g",
            "flavours": "spicy miso, shoyu, tonkotsu, kimchi",
            "allergens": "wheat, soy, sesame, milk (tonkotsu)",
            "shelf life": "8 months",
            "cook time": "4 minutes",
        },
        ["ramen", "noodles", "instant noodles", "spicy", "variety pack"],
    ),
    Item(
        "Maple Pecan Organic Granola",
        "Crumb Theory",
        11.0,
        ["maple pecan", "dark cherry"],
        {
            "net weight": "2 x 340 g",
            "ingredients": "organic oats, pecans, maple syrup, coconut oil",
            "allergens": "tree nuts; made in a facility with gluten",
            "shelf life": "9 months",
        },
        ["granola", "cereal", "breakfast", "organic", "oats"],
    ),
    Item(
        "Crunchy Chili Crisp Oil",
        "Noodle House",
        13.0,
        ["original", "extra hot"],
        {
            "net weight": "2 x 200 g",
            "ingredients": "soybean oil, chili, fried shallot, garlic, sichuan pepper",
            "allergens": "soy",
            "heat": "medium (extra hot: hot)",
            "shelf life": "12 months",
        },
        ["chili oil", "chili crisp", "sauce", "condiment", "spicy"],
    ),
    Item(
        "Jasmine Green Tea Bags",
        "Crumb Theory",
        10.0,
        ["50 bags"],
        {
            "net weight": "50 x 2 g",
            "ingredients": "green tea, jasmine flowers",
            "caffeine": "about 25 mg per cup",
            "shelf life": "24 months",
        },
        ["tea", "green tea", "jasmine", "tea bags", "drink"],
    ),
]

CATEGORIES: list[tuple[str, list[Item]]] = [
    ("apparel", APPAREL),
    ("shoes", SHOES),
    ("bags_accessories", BAGS),
    ("beauty", BEAUTY),
    ("electronics", ELECTRONICS),
    ("home", HOME),
    ("food", FOOD),
]

AFTER_SALES: dict[str, dict[str, Any]] = {
    "apparel": {"return_days": 30, "exchange_days": 30, "warranty_months": 0, "refund_days": 5,
                "notes": "Unworn and unwashed, with original tags attached. Free size exchange "
                "once per order."},
    "shoes": {"return_days": 30, "exchange_days": 30, "warranty_months": 6, "refund_days": 5,
              "notes": "Unworn outdoors, in the original box. Sole or stitching defects are "
              "covered by the warranty."},
    "bags_accessories": {"return_days": 30, "exchange_days": 30, "warranty_months": 12,
                         "refund_days": 5, "notes": "Unused, with tags and dust bag. Hardware "
                         "and stitching defects are covered by the warranty."},
    "beauty": {"return_days": 14, "exchange_days": 14, "warranty_months": 0, "refund_days": 5,
               "notes": "Unopened and sealed only, for hygiene reasons. If a product arrives "
               "damaged or leaking, contact customer service within 48 hours."},
    "electronics": {"return_days": 15, "exchange_days": 15, "warranty_months": 12,
                    "refund_days": 7, "notes": "Returns in the original packaging with all "
                    "accessories. The warranty covers manufacturing defects, not drops or "
                    "water damage beyond the rated protection."},
    "home": {"return_days": 30, "exchange_days": 30, "warranty_months": 12, "refund_days": 5,
             "notes": "Unused, in the original packaging. Bedding and towels: unwashed."},
    "food": {"return_days": 0, "exchange_days": 0, "warranty_months": 0, "refund_days": 3,
             "notes": "Food cannot be returned once shipped. Damaged, spoiled or wrong items "
             "are refunded in full: report them within 7 days with a photo."},
}  # fmt: skip
STORE_POLICY = {
    "return_days": 30,
    "exchange_days": 30,
    "warranty_months": 0,
    "refund_days": 5,
    "notes": "Returns through Orders in the app; refunds go to the original payment method. "
    "Product pages may set shorter windows (beauty, electronics) or none (food).",
}
COUPON_WORDS = ["LUMA", "LIVE", "WKND", "FLASH", "SAVE", "VIP", "HELLO", "TREAT"]


def charm(value: float, rng: random.Random) -> float:
    """A shop price: 19.9 -> 19.90 or 19.99; 121.3 -> 129.00 or 129.99."""
    base = math.floor(value)
    if base >= 100:
        return round(base // 10 * 10 + 9 + rng.choice([0.0, 0.99]), 2)
    return round(base + rng.choice([0.9, 0.99, 0.99]), 2)


def sizes_for(item: Item) -> list[str]:
    lo, hi = item.size_range
    if item.sizes == "tops":
        return [row[0] for row in APPAREL_TOPS[lo:hi]]
    if item.sizes == "bottoms":
        return [row[0] for row in APPAREL_BOTTOMS[lo:hi]]
    if item.sizes == "shoes":
        return [row[0] for row in SHOE_SIZES[lo:hi]]
    if item.sizes == "bedding":
        return [row[0] for row in BEDDING]
    return list(item.extra.get("sizes", ["One Size"]))


def size_chart(item: Item) -> list[dict[str, Any]] | None:
    lo, hi = item.size_range
    if item.sizes == "tops":
        return [
            {"size": s, "measurements": {"chest_cm": chest, "length_cm": length},
             "height_cm": list(h), "weight_kg": list(w)}
            for s, chest, length, h, w in APPAREL_TOPS[lo:hi]
        ]  # fmt: skip
    if item.sizes == "bottoms":
        return [
            {"size": s, "measurements": {"waist_cm": waist, "hip_cm": hip},
             "height_cm": list(h), "weight_kg": list(w)}
            for s, waist, hip, h, w in APPAREL_BOTTOMS[lo:hi]
        ]  # fmt: skip
    if item.sizes == "shoes":
        return [
            {"size": s, "measurements": {"foot_length_cm": foot, "us_size": us}}
            for s, foot, us in SHOE_SIZES[lo:hi]
        ]
    if item.sizes == "bedding":
        return [{"size": s, "measurements": {"duvet_cover": dims}} for s, dims in BEDDING]
    return None


def stock_for(sizes: list[str], colors: list[str], rng: random.Random) -> dict[str, Any]:
    stock: dict[str, dict[str, int]] = {}
    for size in sizes:
        row: dict[str, int] = {}
        for color in colors:
            roll = rng.random()
            if roll < 0.13:
                row[color] = 0
            elif roll < 0.28:
                row[color] = rng.randint(1, 5)
            else:
                row[color] = rng.randint(6, 240)
        stock[size] = row
    return stock


def coupons_for(price: float, rng: random.Random) -> list[dict[str, Any]]:
    count = rng.choices([0, 1, 2, 3], weights=[3, 4, 3, 1])[0]
    coupons = []
    used: set[str] = set()
    for _ in range(count):
        amount = float(max(2, round(price * rng.uniform(0.05, 0.2))))
        threshold_kind = rng.random()
        if threshold_kind < 0.35:
            threshold = 0.0
        elif threshold_kind < 0.75:
            threshold = float(max(10, math.floor(price / 10) * 10))
        else:  # needs more than one item
            threshold = float(math.ceil(price * 1.5 / 10) * 10)
        when = rng.random()
        if when < 0.25:
            expires = rng.choice(EXPIRED_AT)
        elif when < 0.6:
            expires = rng.choice(DURING_SHOW)
        else:
            expires = rng.choice(VALID_UNTIL)
        code = f"{rng.choice(COUPON_WORDS)}{int(amount)}"
        while code in used:
            code = f"{rng.choice(COUPON_WORDS)}{int(amount)}{rng.choice('ABCXYZ')}"
        used.add(code)
        coupons.append({"code": code, "threshold": threshold, "amount": amount, "expires": expires})
    return coupons


def shipping_for(category: str, price: float, rng: random.Random) -> dict[str, Any]:
    warehouse = rng.choice(sorted(WAREHOUSES))
    zone = WAREHOUSES[warehouse]
    heavy = category == "home" and price > 60
    options: dict[str, Any] = {}
    for region in REGIONS:
        if category == "food" and region in ("Canada", "Hawaii"):
            continue  # perishables stay in the contiguous states and Alaska
        days = TRANSIT[zone][region] + (1 if heavy else 0)
        if region == "Canada":
            fee = 14.99 if price < 100 else 9.99
        elif region in ("Alaska", "Hawaii"):
            fee = 12.99 if heavy else 8.99
        else:
            fee = 0.0 if price >= FREE_SHIPPING_OVER else 5.99
        options[region] = {
            "days_min": days,
            "days_max": days + rng.choice([1, 2, 2, 3]),
            "fee": fee,
            "warehouse": warehouse,
        }
    return options


def build(seed: int = SEED) -> dict[str, Any]:
    rng = random.Random(seed)
    total = sum(len(items) for _, items in CATEGORIES)
    link_nos = sorted(rng.sample(range(1, 121), total))
    # Interleave categories so link numbers do not cluster by category.
    order = [(cat, item) for cat, items in CATEGORIES for item in items]
    rng.shuffle(order)
    products: list[dict[str, Any]] = []
    for (category, item), link_no in zip(order, link_nos, strict=True):
        price = charm(item.price * rng.uniform(0.92, 1.08), rng)
        if rng.random() < 0.25:
            list_price = price
        else:
            list_price = round(math.ceil(price * rng.uniform(1.15, 1.6)) - 0.01, 2)
        sizes = sizes_for(item)
        shipping = shipping_for(category, price, rng)
        warehouse = next(iter(shipping.values()))["warehouse"]
        after = dict(AFTER_SALES[category])
        if category == "electronics" and price >= 100:
            after["warranty_months"] = 24
        products.append(
            {
                "link_no": link_no,
                "name": item.name,
                "category": category,
                "brand": item.brand,
                "price": price,
                "list_price": list_price,
                "colors": item.colors,
                "sizes": sizes,
                "stock": stock_for(sizes, item.colors, rng),
                "specs": {**item.specs, "ships from": warehouse},
                "coupons": coupons_for(price, rng),
                "shipping": {
                    r: {k: v for k, v in o.items() if k != "warehouse"} for r, o in shipping.items()
                },
                "size_chart": size_chart(item),
                "after_sales": after,
                "keywords": item.keywords,
            }
        )
    # Curated edge cases every suite can rely on: one product sold out everywhere, one
    # colour sold out in every size.
    gone = products[7]
    gone["stock"] = {size: dict.fromkeys(gone["colors"], 0) for size in gone["sizes"]}
    multi = next(p for p in products[10:] if len(p["colors"]) >= 3 and len(p["sizes"]) >= 3)
    for row in multi["stock"].values():
        row[multi["colors"][-1]] = 0
    products.sort(key=lambda p: p["link_no"])
    data = {
        "currency": "USD",
        "regions": REGIONS,
        "store_policy": STORE_POLICY,
        "products": products,
    }
    Catalog.model_validate(data)  # fail here, not in the room
    return data


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--check", action="store_true", help="exit 1 if --out is stale")
    args = parser.parse_args()
    text = render(build(args.seed))
    if args.check:
        current = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
        if current != text:
            print(f"{args.out} is stale: run scripts/build_catalog.py", file=sys.stderr)
            return 1
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {len(json.loads(text)['products'])} products to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
