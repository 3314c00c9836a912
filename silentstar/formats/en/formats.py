"""Django's own pages (a list's date column, a read-only field, a form's date) say a moment
the one way a person reads it, as ``silentstar.words.moment_said`` does: "6 Dec 2026, 04:34"
(``FORMAT_MODULE_PATH``)."""

DATETIME_FORMAT = "j M Y, H:i"
TIME_FORMAT = "H:i"
# A moment typed into a form, read in the owner's zone: first the way it is shown ("6 Dec 2026,
# 04:34"), then the day-first forms of the locale; Django adds the ISO forms.
DATETIME_INPUT_FORMATS = [
    "%d %b %Y, %H:%M",
    "%d %b %Y %H:%M",
    "%d/%m/%Y %H:%M:%S",
    "%d/%m/%Y %H:%M",
    "%d/%m/%Y",
]
# A time of day typed into the Anvil's date and time fields, to the minute first.
TIME_INPUT_FORMATS = ["%H:%M", "%H:%M:%S", "%H:%M:%S.%f"]
