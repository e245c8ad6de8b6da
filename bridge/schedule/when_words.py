"""The words of the time language, English and German: tables, no logic.

Every token is looked up lower-cased with trailing `,;:!?` removed; German
umlauts also have their ASCII spellings (`übermorgen`, `uebermorgen`).
"""

from __future__ import annotations

from typing import Final

# Monday is 0, as in `date.weekday()`.
WEEKDAYS: Final[dict[str, int]] = {
    "monday": 0, "mon": 0, "mondays": 0,
    "tuesday": 1, "tue": 1, "tues": 1, "tuesdays": 1,
    "wednesday": 2, "wed": 2, "wednesdays": 2,
    "thursday": 3, "thu": 3, "thur": 3, "thurs": 3, "thursdays": 3,
    "friday": 4, "fri": 4, "fridays": 4,
    "saturday": 5, "sat": 5, "saturdays": 5,
    "sunday": 6, "sun": 6, "sundays": 6,
    "montag": 0, "montags": 0,
    "dienstag": 1, "dienstags": 1,
    "mittwoch": 2, "mittwochs": 2,
    "donnerstag": 3, "donnerstags": 3,
    "freitag": 4, "freitags": 4,
    "samstag": 5, "samstags": 5, "sonnabend": 5,
    "sonntag": 6, "sonntags": 6,
}  # fmt: skip

# Two-letter German day names: only inside day lists (`Mo,Mi,Fr`), where they
# cannot be mistaken for an English word at the start of a message.
WEEKDAYS_SHORT_DE: Final[dict[str, int]] = {
    "mo": 0, "di": 1, "mi": 2, "do": 3, "fr": 4, "sa": 5, "so": 6,
}  # fmt: skip

MONTHS: Final[dict[str, int]] = {
    "january": 1, "jan": 1, "januar": 1, "jänner": 1,
    "february": 2, "feb": 2, "februar": 2,
    "march": 3, "mar": 3, "märz": 3, "maerz": 3, "mrz": 3,
    "april": 4, "apr": 4,
    "may": 5, "mai": 5,
    "june": 6, "jun": 6, "juni": 6,
    "july": 7, "jul": 7, "juli": 7,
    "august": 8, "aug": 8,
    "september": 9, "sep": 9, "sept": 9,
    "october": 10, "oct": 10, "oktober": 10, "okt": 10,
    "november": 11, "nov": 11,
    "december": 12, "dec": 12, "dezember": 12, "dez": 12,
}  # fmt: skip

# Units of a duration. Seconds, minutes and hours are elapsed time; days,
# weeks, months and years are calendar steps that keep the wall-clock time.
UNITS: Final[dict[str, str]] = {
    "s": "s", "sec": "s", "secs": "s", "second": "s", "seconds": "s",
    "sek": "s", "sek.": "s", "sekunde": "s", "sekunden": "s",
    "m": "m", "min": "m", "min.": "m", "mins": "m", "minute": "m", "minutes": "m",
    "minuten": "m",
    "h": "h", "hr": "h", "hrs": "h", "hour": "h", "hours": "h",
    "std": "h", "std.": "h", "stunde": "h", "stunden": "h",
    "d": "d", "day": "d", "days": "d", "tag": "d", "tage": "d", "tagen": "d",
    "w": "w", "wk": "w", "week": "w", "weeks": "w", "woche": "w", "wochen": "w",
    "month": "mo", "months": "mo", "monat": "mo", "monate": "mo", "monaten": "mo",
    "year": "y", "years": "y", "yr": "y", "yrs": "y",
    "jahr": "y", "jahre": "y", "jahren": "y",
}  # fmt: skip

ELAPSED_SECONDS: Final[dict[str, int]] = {"s": 1, "m": 60, "h": 3600}

# Number words (the article `a`/`ein` counts as one).
NUMBERS: Final[dict[str, int]] = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "fifteen": 15, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50,
    "ein": 1, "eine": 1, "einer": 1, "einem": 1, "einen": 1, "eins": 1,
    "zwei": 2, "drei": 3, "vier": 4, "fünf": 5, "fuenf": 5, "sechs": 6,
    "sieben": 7, "acht": 8, "neun": 9, "zehn": 10, "elf": 11, "zwölf": 12,
    "zwoelf": 12, "fünfzehn": 15, "fuenfzehn": 15, "zwanzig": 20, "dreißig": 30,
    "dreissig": 30, "vierzig": 40, "fünfzig": 50, "fuenfzig": 50,
}  # fmt: skip

# Day words: offset in days from today (negative: in the past).
DAY_WORDS: Final[dict[str, int]] = {
    "today": 0, "heute": 0, "tomorrow": 1, "tmrw": 1, "morgen": 1,
    "übermorgen": 2, "uebermorgen": 2, "yesterday": -1, "gestern": -1,
    "vorgestern": -2,
}  # fmt: skip

# Parts of the day: the default hour, and whether a bare 1..11 means p.m.
PARTS: Final[dict[str, tuple[int, bool]]] = {
    "morning": (9, False), "früh": (9, False), "frueh": (9, False),
    "morgens": (9, False), "vormittag": (10, False), "vormittags": (10, False),
    "noon": (12, False), "mittag": (12, False), "mittags": (12, False),
    "afternoon": (15, True), "nachmittag": (15, True), "nachmittags": (15, True),
    "evening": (19, True), "abend": (19, True), "abends": (19, True),
    "night": (22, True), "nacht": (22, True), "nachts": (22, True),
}  # fmt: skip

# "next monday", "nächsten Montag": never today. "this"/"on"/"am": may be today.
NEXT_WORDS: Final[frozenset[str]] = frozenset(
    {"next", "nächsten", "naechsten", "nächster", "naechster", "nächste", "naechste",
     "kommenden", "kommender", "kommende"}
)  # fmt: skip
ON_WORDS: Final[frozenset[str]] = frozenset({"on", "am", "this", "diesen", "dieser", "the"})
AT_WORDS: Final[frozenset[str]] = frozenset({"at", "um", "@", "gegen"})
AND_WORDS: Final[frozenset[str]] = frozenset({"and", "und", "&"})
SELF_WORDS: Final[frozenset[str]] = frozenset({"me", "mich"})
NOON_WORDS: Final[frozenset[str]] = frozenset({"noon", "mittag", "midday"})
MIDNIGHT_WORDS: Final[frozenset[str]] = frozenset({"midnight", "mitternacht"})
TONIGHT_WORDS: Final[frozenset[str]] = frozenset({"tonight", "tonite"})

# Words only a German speaker writes: they switch the echo and errors to German.
GERMAN_HINTS: Final[frozenset[str]] = frozenset(
    {"heute", "morgen", "übermorgen", "uebermorgen", "gestern", "um", "uhr", "am",
     "nächsten", "naechsten", "kommenden", "mich", "einer", "einem", "halben",
     "anderthalb", "minuten", "stunde", "stunden", "tagen", "wochen", "monaten",
     "jahren", "sekunden", "abend", "früh", "mittag", "nachmittag", "und"}
    | {w for w, _ in WEEKDAYS.items() if w.endswith(("tag", "tags", "woch", "wochs"))}
)  # fmt: skip

WEEKDAY_NAMES: Final[dict[str, tuple[str, ...]]] = {
    "en": ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"),
    "de": ("Mo", "Di", "Mi", "Do", "Fr", "Sa", "So"),
}
MONTH_NAMES: Final[dict[str, tuple[str, ...]]] = {
    "en": ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"),
    "de": ("Jan", "Feb", "Mär", "Apr", "Mai", "Jun", "Jul", "Aug", "Sep", "Okt", "Nov", "Dez"),
}
