// Package display makes text that a caller or a tool body wrote safe to show to a person,
// on a terminal or a page: whatever it contains, what is shown is what is there.
//
// A hostile agent or tool body writes text that toolgate shows to people — a call's
// session, its arguments, a tool's output and error, a Pod's log. Raw, such text can
// move the cursor and overwrite what was printed before it (CR, ESC sequences), rewrite
// the clipboard or the window title (OSC 52, OSC 0), clear the screen, reorder what
// follows it (bidi overrides and isolates, U+202E) or hide itself (zero-width characters,
// tag characters). display shows every such character as a visible escape instead:
//
//	\n \r \t                  newline, carriage return, tab (in a one-line field; Text keeps \n and tab)
//	\x1b \x00 … \x7f          the other C0 controls and DEL
//	\u009b                    C1 controls (U+0080–U+009F)
//	\u202e \u200b \ufeff …    format characters (Unicode category Cf: bidi controls U+202A–U+202E,
//	                          U+2066–U+2069, U+200E, U+200F, U+061C; zero-width U+200B–U+200D,
//	                          U+2060; U+FEFF; soft hyphen; tag characters U+E0000–U+E007F …)
//	\u2028 \u2029             line and paragraph separators
//	\u3164 \u115f …           other default-ignorable characters (invisible fillers, U+034F)
//	\ufffe \U0010ffff         noncharacters
//	\ufe0f                    a variation selector not directly after a visible character
//	                          (one after a letter or emoji is kept: it selects its glyph)
//	\xff                      each byte that is not part of valid UTF-8
//
// and cuts a line longer than the limit (DefaultMaxLine characters as shown) with a
// visible marker, "… [line cut: N more bytes]". Everything else, including every letter
// and emoji of every script, is shown as itself; backslashes are not escaped, so a
// literal "\x1b" in the text looks like an escaped ESC (but is harmless).
//
// Line is for one-line fields (a session, a name, a message in a table cell), Text for
// multi-line output (a result, a log), Options for other limits, Pieces for renderers
// that mark escapes (the approval console highlights them), Writer for streams (logs).
// Machine output (JSON, YAML, --raw) is not for display and must not go through here.
package display
