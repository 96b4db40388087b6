# mirror.sh — sourced by a compat suite's setup.sh (tests/compat/run-suite.sh sets $root,
# $bin, $build and SERVE_ARGS): serves the stand-in python image (standin.py) under Docker
# Hub names from Debian's docker-registry on 127.0.0.1, and points `sandlot serve` at it
# with --registry-mirror, so that what the providers' SDKs generate (FROM
# python:3.12-slim-bookworm, fromImage('python:3.12')) pulls without the internet.
#
#   mirror_start REF...   REF a Docker Hub reference: python:3.12-slim-bookworm, e2bdev/base
#   mirror_stop           from the suite's suite_cleanup; ends the registry by its pid
#
# MIRROR_URL is the registry's http://127.0.0.1:PORT; MIRROR_LOG its access log.
mirror_pid=

mirror_start() {
	local here port cfg ref repo
	here=$(dirname "${BASH_SOURCE[0]}")
	python3 "$here/standin.py" "$build/images/default.tar.zst" "$build/compat-standin"
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	cfg=$root/registry.yml
	MIRROR_LOG=$root/registry.log
	cat >"$cfg" <<-EOF
		version: 0.1
		log:
		  level: warn
		  accesslog:
		    disabled: false
		storage:
		  filesystem:
		    rootdirectory: $root/registry-data
		http:
		  addr: 127.0.0.1:$port
	EOF
	/usr/bin/docker-registry serve "$cfg" >"$MIRROR_LOG" 2>&1 &
	mirror_pid=$!
	MIRROR_URL=http://127.0.0.1:$port
	for _ in $(seq 200); do
		curl -sf "$MIRROR_URL/v2/" >/dev/null && break
		kill -0 "$mirror_pid" 2>/dev/null || { cat "$MIRROR_LOG" >&2; return 1; }
		sleep 0.05
	done
	for ref in "$@"; do
		# Docker Hub's own spelling: a name without a slash is library/NAME; no tag, latest.
		repo=$ref
		[[ $repo == */* ]] || repo=library/$repo
		[[ ${repo##*/} == *:* ]] || repo=$repo:latest
		skopeo --insecure-policy copy -q --dest-tls-verify=false \
			"oci:$build/compat-standin/layout:latest" "docker://127.0.0.1:$port/$repo"
	done
	SERVE_ARGS+=(--registry-mirror "$MIRROR_URL")
	export MIRROR_URL MIRROR_LOG
}

mirror_stop() {
	if [ -n "$mirror_pid" ]; then
		kill -TERM "$mirror_pid" 2>/dev/null
		wait "$mirror_pid" 2>/dev/null
		mirror_pid=
	fi
}
