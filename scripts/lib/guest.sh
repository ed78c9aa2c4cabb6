# Shared by the QEMU guest scripts (scripts/qemu-vfio-guest, scripts/siw-guest), sourced
# after they set `name` (message prefix), `mark` (console marker prefix), `cache`,
# `verbose`, `timeout_s` and `keep`. Debian's kernel is fetched with `apt-get download`,
# never installed; the guest is busybox and an /init the caller writes. The caller's
# /init prints `$mark-READY ...` before the command it runs, `$mark-EXIT <status>` after
# it, and `$mark-SETUP-FAILED` (after a `$name: why` line) if it cannot get that far.

say() { printf '%s: %s\n' "$name" "$*" >&2; }
die() { say "$*"; exit 125; }
if [ "$(id -u)" -ne 0 ]; then sudo=sudo; else sudo=; fi

# apt: only when something is missing; `apt-get update` only if the install fails (stale lists).
guest_apt_install() {
  say "installing $*"
  $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null 2>&1 ||
    { $sudo apt-get update -qq >/dev/null 2>&1 &&
      $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null; } ||
    die "could not install $*"
}

# The host tools every guest needs: QEMU, a static busybox, cpio, depmod/modprobe, xz.
guest_host_tools() {
  local missing=()
  command -v qemu-system-x86_64 >/dev/null || missing+=(qemu-system-x86)
  dpkg -s busybox-static >/dev/null 2>&1 || missing+=(busybox-static)  # /bin/busybox, static
  command -v cpio >/dev/null || missing+=(cpio)
  command -v depmod >/dev/null || [ -x /usr/sbin/depmod ] || missing+=(kmod)
  command -v xz >/dev/null || missing+=(xz-utils)
  [ ${#missing[@]} -eq 0 ] || guest_apt_install "${missing[@]}"
  export PATH="$PATH:/usr/sbin:/sbin"
}

# The kernel package linux-image-amd64 currently depends on (linux-image-6.1.*-amd64).
guest_kernel_package() {
  local of='/Depends: linux-image-[0-9]/ { print $2; exit }' kpkg
  kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk "$of")
  [ -n "$kpkg" ] || { $sudo apt-get update -qq >/dev/null 2>&1; kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk "$of"); }
  [ -n "$kpkg" ] || die "cannot resolve the kernel package behind linux-image-amd64"
  echo "$kpkg"
}

# guest_download DIR PACKAGE...: `apt-get download` into DIR. _apt cannot write into
# root-owned dirs; apt then downloads as root (warning muted). `apt-get update` once on failure.
guest_download() {
  local dir=$1; shift
  (cd "$dir" && apt-get download -qq "$@" >/dev/null 2>&1) ||
    { $sudo apt-get update -qq >/dev/null 2>&1; (cd "$dir" && apt-get download -qq "$@" >/dev/null 2>&1); } ||
    die "apt-get download $* failed"
}

# guest_modules ROOT KVER OUT MODULE...: the modules MODULE... need from the unpacked kernel
# tree ROOT, in load order, decompressed into OUT, listed in OUT/modules.list. The .deb ships
# no modules.dep (its postinst makes it), so depmod builds one; modprobe prints the order.
guest_modules() {
  local root=$1 kver=$2 out=$3 m ko file; shift 3
  depmod -b "$root" "$kver"
  for m in "$@"; do
    modprobe -d "$root" -S "$kver" --show-depends "$m" | awk '$1 == "insmod" { print $2 }'
  done | awk '!seen[$0]++' | while read -r ko; do
    file=$(basename "$ko")
    case "$ko" in
      *.ko.xz)  xz -dc "$ko" >"$out/${file%.xz}"; file=${file%.xz} ;;
      *.ko.zst) command -v zstd >/dev/null || guest_apt_install zstd; zstd -qdc "$ko" >"$out/${file%.zst}"; file=${file%.zst} ;;
      *.ko)     cp "$ko" "$out/" ;;
      *) die "unexpected module file $ko" ;;
    esac
    echo "$file" >>"$out/modules.list"
  done
}

# guest_run LOG QEMU-ARGS...: runs QEMU (TCG) under the timeout with its console in LOG,
# shows the console as it comes (all of it with -v, else the command's part, after the
# READY marker), and exits with the guest command's status, or 125 with the reason and
# the last 40 console lines.
guest_run() {
  local log=$1; shift
  [ "$verbose" -eq 0 ] || say "$*"
  local start=$EPOCHREALTIME ready='' on=0 line qpid qrc=0 secs status why
  timeout -k 5 "$timeout_s" "$@" </dev/null >>"$log" 2>&1 &
  qpid=$!
  trap 'kill $qpid 2>/dev/null' INT TERM
  while IFS= read -r line; do
    line=${line%$'\r'}
    case "$line" in
      *"$mark-EXIT "*) on=0 ;;
      "$mark-READY"*) ready=$(awk -v s="$start" -v e="$EPOCHREALTIME" 'BEGIN { printf "%.1f", e - s }')
        [ "$verbose" -eq 1 ] || say "ready after $ready s: ${line#"$mark-READY"}" ;;
    esac
    if [ "$verbose" -eq 1 ] || [ $on -eq 1 ]; then printf '%s\n' "$line"; fi
    [[ $line != "$mark-READY"* ]] || on=1
  done < <(tail -n +1 -F -s 0.2 --pid=$qpid "$log" 2>/dev/null)
  wait $qpid || qrc=$?
  secs=$(awk -v s="$start" -v e="$EPOCHREALTIME" 'BEGIN { printf "%.1f", e - s }')
  status=$(tr -d '\r' <"$log" | awk -v m="$mark-EXIT " 'index($0, m) { s = substr($0, index($0, m) + length(m)) } END { print s }')
  if [[ $status =~ ^[0-9]+$ ]]; then
    say "command exited with status $status (ready after ${ready:-?} s, $secs s in all)"
    exit "$status"
  fi
  if grep -q 'Kernel panic' "$log"; then why="guest kernel panic"
  elif [ $qrc -eq 124 ] || [ $qrc -eq 137 ]; then why="timeout after $timeout_s s"
  elif grep -q "$mark-SETUP-FAILED" "$log"; then
    why="guest setup failed ($(tr -d '\r' <"$log" | sed -n "s/^$name: //p" | tail -n 1))"
  else why="no $mark-EXIT marker (QEMU exit status $qrc)"; fi
  say "$why; last 40 console lines:"
  tail -n 40 "$log" | tr -d '\r' >&2
  [ -z "$keep" ] || say "kernel, initramfs and console log kept in $(dirname "$log")"
  exit 125
}
