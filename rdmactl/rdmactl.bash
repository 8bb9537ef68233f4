# SPDX-License-Identifier: MIT
# bash completion for rdmactl(8): its verbs and options (each verb's own
# after it), for status, list and wait --device the names of the devices
# rdmad lists, and for --netns the IDs of the other network namespaces it
# lists devices of, asked through the same socket (--socket on the line,
# else $RDMAD_SOCKET, else the default).  Installed as "rdmactl" in
# bash-completion's completionsdir.  Needs nothing from the
# bash-completion package itself.

_rdmactl()
{
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
	local verbs="status list monitor wait env rescan help version"
	local opts="--socket --json --pretty --timeout --help --version"
	local -A verb_opts=([wait]="--device --ready -d -r --netns"
		[env]="--nccl --ucx --netns"
		[status]="--netns --all-namespaces -A"
		[list]="--netns --all-namespaces -A")
	local verb="" nargs=0 i w
	local -a socket=()

	# bash splits "--socket=PATH" at the "=".
	[[ $prev == = ]] && prev=${COMP_WORDS[COMP_CWORD - 2]}
	case $prev in
	-s | --socket)
		COMPREPLY=($(compgen -f -- "$cur"))
		return
		;;
	-t | --timeout)
		COMPREPLY=()
		return
		;;
	esac
	for ((i = 1; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		case $w in
		-s | --socket)
			[[ ${COMP_WORDS[i + 1]} == = ]] && ((i++))
			((i++))
			socket=(--socket "${COMP_WORDS[i]}")
			;;
		-t | --timeout | -d | --device | --netns)
			[[ ${COMP_WORDS[i + 1]} == = ]] && ((i++))
			((i++))
			;;
		-*) ;;
		*)
			if [[ -z $verb ]]; then
				verb=$w
			else
				((nargs++))
			fi
			;;
		esac
	done
	# After the loop, which found the socket to ask.
	if [[ $prev == -d || $prev == --device ]]; then
		COMPREPLY=($(compgen -W "$(_rdmactl_devices)" -- "$cur"))
		return
	fi
	if [[ $prev == --netns ]]; then
		COMPREPLY=($(compgen -W "$(_rdmactl_netns)" -- "$cur"))
		return
	fi
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$opts -s -j -p -t -h -V \
			${verb:+${verb_opts[$verb]}}" -- "$cur"))
		return
	fi
	if [[ -z $verb ]]; then
		COMPREPLY=($(compgen -W "$verbs" -- "$cur"))
		return
	fi
	case $verb in
	status | list)
		((nargs == 0)) || return
		COMPREPLY=($(compgen -W "$(_rdmactl_devices)" -- "$cur"))
		;;
	esac
}

# The names rdmad lists, asked through the socket of the command line:
# the first word of each line of `list` (an unusable device has
# " (unusable)" after its name).
_rdmactl_devices()
{
	local name
	"${COMP_WORDS[0]}" "${socket[@]}" --timeout 1 list 2>/dev/null |
		while read -r name _; do
			printf '%s\n' "$name"
		done
}

# The IDs of the other network namespaces rdmad lists devices of: what
# follows "@netns:" or "@netns-cookie:" in `list --all-namespaces`.
_rdmactl_netns()
{
	local name
	"${COMP_WORDS[0]}" "${socket[@]}" --timeout 1 list --all-namespaces \
		2>/dev/null | while read -r name _; do
		[[ $name == *@netns:* || $name == *@netns-cookie:* ]] &&
			printf '%s\n' "${name##*:}"
	done | sort -u
}
complete -F _rdmactl rdmactl
