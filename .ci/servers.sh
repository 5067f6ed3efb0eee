#!/usr/bin/env bash
# .ci/servers.sh DIR: installs, under DIR (outside the repository), the
# servers the Redis stores are tested on besides the system redis-server,
# from Debian's packages only, and prints on stdout the value of
# RATEKIT_REDIS_SERVERS for them: one command prefix per server, separated
# by ';' (see testkit/redistest).
#
# Each server is its release's package unpacked with dpkg-deb -x, with the
# shared libraries it needs (its Depends on lib* and lua-* packages,
# followed recursively, libc6 included) from the same release, and run by
# that release's own loader:
#
#	DIR/NAME/root/.../ld-linux-x86-64.so.2 --library-path LIBS DIR/NAME/root/usr/bin/redis-server
#
# so that nothing of the host's libraries is used and nothing is installed
# on the host. apt runs with a private sources list, package lists and
# cache under DIR/NAME/apt; the host's apt sources and dpkg database are
# left alone. A server already unpacked under DIR whose --version answers
# is used again. Needs root only where DIR does; needs the Debian archive
# and its keyring (debian-archive-keyring, which on bookworm has the keys
# of bullseye and trixie too). The archive is RATEKIT_DEBIAN_MIRROR, a
# URL apt understands, or else the host's own: the first entry of apt's
# sources, in the order apt reads them (Dir::Etc::SourceList, then the
# *.list and *.sources files of Dir::Etc::SourceParts, as apt-config
# says, so APT_CONFIG applies), that is enabled, of type deb, with the
# component main and the host's Debian release (VERSION_CODENAME of
# /etc/os-release) or stable, testing or unstable as a suite. It is
# reached as the host's apt configuration says (proxies included).
#
# Progress goes to stderr; any failure stops the script with a message
# naming the server and the step.
set -euo pipefail

usage='usage: .ci/servers.sh DIR (for example /var/tmp/ratekit-servers)'
dir=${1:?$usage}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

keyring=/usr/share/keyrings/debian-archive-keyring.gpg
arch=x86_64-linux-gnu

say() { echo ".ci/servers.sh: $*" >&2; }
fail() {
	say "FAILED: $*"
	exit 1
}
[ "$(dpkg --print-architecture 2>/dev/null)" = amd64 ] || fail "only amd64 is supported (the loader path is x86_64's)"
[ -r "$keyring" ] || fail "$keyring is missing: apt-get install debian-archive-keyring"
for tool in apt-get apt-cache apt-config dpkg-deb; do
	command -v "$tool" >/dev/null || fail "$tool not found: this script needs a Debian system"
done

# apt_sources: the files apt reads its sources from, in its order, one a
# line: the main list, then the parts directory's *.list and *.sources
# files (names of letters, digits, _, - and . only; apt ignores others),
# sorted.
apt_sources() {
	local list parts f LC_ALL=C
	eval "$(apt-config shell list Dir::Etc::SourceList/f parts Dir::Etc::SourceParts/d)"
	[ -z "${list:-}" ] || [ ! -f "$list" ] || echo "$list"
	[ -n "${parts:-}" ] && [ -d "$parts" ] || return 0
	for f in "${parts%/}"/*; do
		case ${f##*/} in
		*[!A-Za-z0-9_.-]*) ;;
		*.list | *.sources) [ -f "$f" ] && echo "$f" ;;
		esac
	done
}

# apt_mirror: the URI of the host's Debian archive in apt's sources (see
# the top of this file), or nothing.
apt_mirror() {
	local codename="" f
	local -a files=()
	if [ -r /etc/os-release ]; then
		# shellcheck disable=SC1091 # the host's
		codename=$(. /etc/os-release && [ "${ID:-}" = debian ] && echo "${VERSION_CODENAME:-}") || codename=""
	fi
	while IFS= read -r f; do files+=("$f"); done < <(apt_sources)
	[ ${#files[@]} -gt 0 ] || return 0
	awk -v codename="$codename" '
		function suite_ok(s) {
			return (codename != "" && s == codename) || s == "stable" || s == "testing" || s == "unstable"
		}
		function has(list, word,   n, a, i) {
			n = split(list, a, /[ \t]+/)
			for (i = 1; i <= n; i++) if (a[i] == word) return 1
			return 0
		}
		function any_suite(list,   n, a, i) {
			n = split(list, a, /[ \t]+/)
			for (i = 1; i <= n; i++) if (suite_ok(a[i])) return 1
			return 0
		}
		function first(list,   a) { split(list, a, /[ \t]+/); return a[1] }
		# A deb822 stanza: its fields, names lower-cased, values joined.
		function stanza_end() {
			if (!found && nf && has(f["types"], "deb") && tolower(f["enabled"]) != "no" &&
				has(f["components"], "main") && any_suite(f["suites"]) && f["uris"] != "") {
				print first(f["uris"]); found = 1; exit
			}
			delete f; nf = 0; key = ""
		}
		FNR == 1 { if (deb822) stanza_end(); deb822 = (FILENAME ~ /\.sources$/) }
		deb822 {
			if ($0 ~ /^#/) next
			if ($0 ~ /^[ \t]*$/) { stanza_end(); next }
			if ($0 ~ /^[ \t]/) { if (key != "") f[key] = f[key] " " $0; next }
			i = index($0, ":"); if (i == 0) next
			key = tolower(substr($0, 1, i - 1)); f[key] = substr($0, i + 1); nf++
			gsub(/^[ \t]+|[ \t]+$/, "", f[key])
			next
		}
		{
			sub(/#.*/, "")
			if ($1 != "deb") next
			i = 2; off = 0
			if ($2 ~ /^\[/) {
				# [ options ]: enabled=no disables the entry.
				for (; i <= NF; i++) {
					if ($i ~ /^\[?enabled=no\]?$/) off = 1
					if ($i ~ /\]$/) { i++; break }
				}
			}
			if (off || i + 2 > NF) next
			comps = ""
			for (j = i + 2; j <= NF; j++) comps = comps " " $j
			if (suite_ok($(i + 1)) && has(comps, "main")) { print $i; found = 1; exit }
		}
		END { if (deb822) stanza_end() }
	' "${files[@]}"
}

if [ -n "${RATEKIT_DEBIAN_MIRROR:-}" ]; then
	mirror=$RATEKIT_DEBIAN_MIRROR
	say "the Debian archive: $mirror (RATEKIT_DEBIAN_MIRROR)"
else
	mirror=$(apt_mirror)
	[ -n "$mirror" ] || fail "no Debian archive among apt's sources ($(apt_sources | tr '\n' ' ')): an enabled deb entry with the component main and this host's Debian release as a suite; set RATEKIT_DEBIAN_MIRROR to a Debian mirror's URL"
	say "the Debian archive: $mirror (from apt's sources)"
fi

# The servers: name, the suites of its release, its packages (the one with
# the binary first), and the binary's path in the package. The
# redis-server and valkey-server packages hold only the symlink
# usr/bin/redis-server -> redis-check-rdb, which the binary needs: it acts
# as the server when called by that name.
servers=(
	"redis-6.0|bullseye|redis-tools redis-server|usr/bin/redis-server"
	"valkey-8|bookworm bookworm-backports|valkey-tools/bookworm-backports valkey-server/bookworm-backports|usr/bin/valkey-server"
	"redis-8|trixie|redis-tools redis-server|usr/bin/redis-server"
)

# prefix NAME: the server's command prefix, from what install unpacked.
prefix() {
	local root=$dir/$1/root bin=$2 loader="" c
	for c in usr/lib/$arch lib/$arch usr/lib64 lib64; do
		# An absolute symlink points into the host: only a loader that
		# resolves inside root is the release's own.
		if [ -e "$root/$c/ld-linux-x86-64.so.2" ] &&
			[[ $(readlink -f "$root/$c/ld-linux-x86-64.so.2") == "$root"/* ]]; then
			loader=$(readlink -f "$root/$c/ld-linux-x86-64.so.2")
			break
		fi
	done
	[ -n "$loader" ] || return 1
	echo "$loader --library-path $root/usr/lib/$arch:$root/lib/$arch $root/$bin"
}

# aptx NAME ARGS...: apt-get or apt-cache (the first of ARGS) with the
# server's private state.
aptx() {
	local a=$dir/$1/apt tool=$2
	shift 2
	"$tool" -q -o Dir::Etc::SourceList="$a/sources.list" -o Dir::Etc::SourceParts=/dev/null \
		-o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts=/dev/null \
		-o Dir::State::Lists="$a/lists" -o Dir::State::status="$a/status" -o Dir::Cache="$a/cache" \
		-o Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false \
		-o Acquire::IndexTargets::deb::DEP-11-icons::DefaultEnabled=false \
		-o Acquire::IndexTargets::deb::DEP-11-icons-small::DefaultEnabled=false \
		-o APT::Sandbox::User=root "$@"
}

# closure NAME PACKAGES...: PACKAGES and, recursively, the lib* and lua-*
# packages they depend on (the first of each set of alternatives), one a
# line, as pkg or pkg/suite for the named ones. One apt-cache call per
# level of dependencies.
closure() {
	local name=$1 p
	shift
	local -A seen=()
	local level=("$@") next
	while [ ${#level[@]} -gt 0 ]; do
		for p in "${level[@]}"; do
			seen[${p%%/*}]=1
			echo "$p"
		done
		next=()
		while read -r p; do
			case $p in lib* | lua-*) [ -n "${seen[$p]:-}" ] || { seen[$p]=1 && next+=("$p"); } ;; esac
		done < <(aptx "$name" apt-cache depends --no-recommends --no-suggests --no-conflicts \
			--no-breaks --no-replaces --no-enhances "${level[@]}" |
			awk '
				# "  Depends: p", " |Depends: p" when alternatives follow;
				# a virtual "<p>" is followed by its providers, indented.
				/^ *\|?(Pre)?Depends: / {
					take = !alt; alt = ($1 ~ /^\|/); virt = 0
					if ($2 ~ /^</) virt = take; else if (take) print $2
					next
				}
				/^    [^ ]/ { if (virt) print $1; virt = 0 }')
		level=("${next[@]}")
	done
}

install() {
	local name=$1 suites=$2 pkgs=$3 bin=$4 s
	local a=$dir/$name/apt root=$dir/$name/root
	rm -rf "$root"
	mkdir -p "$a/lists/partial" "$a/cache/archives/partial" "$a/debs" "$root"
	: >"$a/status"
	: >"$a/sources.list"
	for s in $suites; do
		echo "deb [signed-by=$keyring] $mirror $s main" >>"$a/sources.list"
	done
	say "$name: apt-get update ($suites)"
	aptx "$name" apt-get update --error-on=any >"$a/update.log" 2>&1 ||
		fail "$name: apt-get update failed (is the Debian mirror $mirror reachable?): $(tail -5 "$a/update.log")"
	local -a all
	# shellcheck disable=SC2086 # pkgs is a list
	mapfile -t all < <(closure "$name" $pkgs)
	[ ${#all[@]} -gt 0 ] || fail "$name: no packages found for $pkgs in $suites"
	say "$name: downloading ${all[*]}"
	rm -f "$a/debs"/*.deb
	(cd "$a/debs" && aptx "$name" apt-get download "${all[@]}") >"$a/download.log" 2>&1 ||
		fail "$name: apt-get download failed: $(tail -5 "$a/download.log")"
	local deb
	for deb in "$a/debs"/*.deb; do
		dpkg-deb -x "$deb" "$root" || fail "$name: dpkg-deb -x $deb failed"
	done
}

# check NAME PREFIX: the server's libraries all resolve and it says its
# version.
check() {
	local name=$1 cmd=$2 missing
	# shellcheck disable=SC2086 # cmd is a command line
	missing=$(${cmd/ --library-path/ --list --library-path} 2>&1 | grep -i 'not found' || true)
	[ -z "$missing" ] || fail "$name: libraries not found: $missing"
	# shellcheck disable=SC2086
	$cmd --version >&2 || fail "$name: '$cmd --version' failed"
}

# setup NAME SUITES PACKAGES BIN: installs the server unless it is there.
setup() {
	local name=$1 suites=$2 pkgs=$3 bin=$4 cmd
	cmd=$(prefix "$name" "$bin" || true)
	# shellcheck disable=SC2086 # cmd is a command line
	if [ -n "$cmd" ] && [ -e "$dir/$name/ok" ] && $cmd --version >/dev/null 2>&1; then
		say "$name: already installed in $dir/$name"
		return
	fi
	rm -f "$dir/$name/ok"
	install "$name" "$suites" "$pkgs" "$bin"
	[ -x "$dir/$name/root/$bin" ] || fail "$name: $bin is not in its packages"
	prefix "$name" "$bin" >/dev/null || fail "$name: no ld-linux-x86-64.so.2 of its own under $dir/$name/root"
	touch "$dir/$name/ok"
}

# The servers install at once, each in its own process.
pids=()
for spec in "${servers[@]}"; do
	IFS='|' read -r name suites pkgs bin <<<"$spec"
	setup "$name" "$suites" "$pkgs" "$bin" &
	pids+=($!)
done
failed=0
for pid in "${pids[@]}"; do
	wait "$pid" || failed=1
done
[ $failed = 0 ] || fail "see the message above"

out=()
for spec in "${servers[@]}"; do
	IFS='|' read -r name suites pkgs bin <<<"$spec"
	cmd=$(prefix "$name" "$bin")
	check "$name" "$cmd"
	out+=("$cmd")
done
(
	IFS=';'
	echo "${out[*]}"
)
