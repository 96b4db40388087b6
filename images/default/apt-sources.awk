# apt-sources.awk — print the host's apt entries for one Debian suite as one-line
# "deb" entries. Reads sources.list (one-line) and *.sources (deb822) files; keeps the
# entries whose suite is SUITE, SUITE-updates or SUITE-security (set with -v suite=).
function keep(s) { return s == suite || s == suite "-updates" || s == suite "-security" }
function emit(uri, s, comps, signed) {
	if (!keep(s) || (uri s) in seen)
		return
	seen[uri s] = 1
	printf "deb %s%s %s %s\n", signed != "" ? "[signed-by=" signed "] " : "", uri, s, comps
}
function flush(   n, u, m, t, i, j, uris, suites) {
	if (f["types"] ~ /(^|[ \t])deb([ \t]|$)/ && tolower(f["enabled"]) != "no") {
		n = split(f["uris"], uris, /[ \t]+/)
		m = split(f["suites"], suites, /[ \t]+/)
		for (i = 1; i <= n; i++)
			for (j = 1; j <= m; j++)
				if (uris[i] != "")
					emit(uris[i], suites[j], f["components"], f["signed-by"] ~ /^\// ? f["signed-by"] : "")
	}
	delete f
	key = ""
}
FNR == 1 { if (deb822) flush(); deb822 = FILENAME ~ /\.sources$/ }
deb822 && /^[ \t]*#/ { next }
deb822 && /^[ \t]*$/ { flush(); next }
deb822 && /^[ \t]/ { if (key != "") f[key] = f[key] " " $0; next }
deb822 {
	key = tolower(substr($0, 1, index($0, ":") - 1))
	v = substr($0, index($0, ":") + 1)
	gsub(/^[ \t]+|[ \t]+$/, "", v)
	f[key] = v
	next
}
# One-line format: deb [options] URI SUITE COMPONENT...
$1 == "deb" {
	i = 2; signed = ""
	if ($2 ~ /^\[/) {
		for (; i <= NF; i++) {
			if ($i ~ /^\[?signed-by=/) { signed = $i; sub(/^\[?signed-by=/, "", signed); sub(/\]$/, "", signed) }
			if ($i ~ /\]$/) break
		}
		i++
	}
	comps = ""
	for (j = i + 2; j <= NF && $j !~ /^#/; j++)
		comps = comps (comps == "" ? "" : " ") $j
	emit($i, $(i + 1), comps, signed ~ /^\// ? signed : "")
}
END { if (deb822) flush() }
