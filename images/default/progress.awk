# progress.awk — read the log of rootfs.sh (mmdebstrap --verbose) and print one line,
# PHASE ACTIVITY N TOTAL separated by \037: the last "I:" step, what apt/dpkg did last
# (downloaded, unpacked, set up) with how many packages so far, and how many to install.
/^I: / { phase = substr($0, 4); sub(/\.\.\.$/, "", phase) }
/^E: / { phase = "error: " substr($0, 4) }
/ newly installed, / { for (i = 1; i < NF; i++) if ($(i + 1) == "newly") total += $i }
/^Get:/ && !/ (InRelease|Release|Release\.gpg|Packages|Sources|Translation-[^ ]*) \[/ {
	got++; act = "downloaded"; n = got
}
/^Unpacking / { unpacked++; act = "unpacked"; n = unpacked }
/^Setting up / { setup++; act = "set up"; n = setup }
END { printf "%s\037%s\037%d\037%d\n", phase, act, n, total }
