# SPDX-License-Identifier: LGPL-2.1-or-later
# bash completion for cpuhpctl(8): commands, options, and CPU numbers.
# online offers the CPUs now offline, offline those now online (only CPUs
# with a cpuN/online file: the hotpluggable ones), read from
# ROOT/devices/system/cpu, ROOT being the command line's --sysfs-root, else
# ${CPUHPCTL_SYSFS_ROOT:-/sys}, as cpuhpctl itself does: set it to the tree
# a cpuhpd --sysfs-root names (a simulated one).

# _cpuhpctl_cpus STATE ROOT: the hotpluggable CPUs whose online file says STATE (0 or 1).
_cpuhpctl_cpus()
{
	local dir=$2/devices/system/cpu f n v
	for f in "$dir"/cpu[0-9]*/online; do
		[[ -r $f ]] || continue
		n=${f%/online}
		n=${n##*/cpu}
		read -r v <"$f" 2>/dev/null || continue
		[[ $v == "$1" ]] && printf '%s\n' "$n"
	done | sort -n
}

_cpuhpctl()
{
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
	local i cmd= cmd_at=0 w root=${CPUHPCTL_SYSFS_ROOT:-/sys}
	local commands='status leases cpus states state online offline smt plan new-cpu watch hold freeze
		metrics help'

	# The command is the first word that is neither an option nor an option's value.
	for ((i = 1; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		case $w in
		-s | --socket) ((i++)) ;;
		--sysfs-root)
			((i++))
			[[ -n ${COMP_WORDS[i]} ]] && root=${COMP_WORDS[i]}
			;;
		--sysfs-root=*) root=${w#--sysfs-root=} ;;
		-*) ;;
		*)
			cmd=$w
			cmd_at=$i
			break
			;;
		esac
	done

	if [[ -z $cmd ]]; then
		case $prev in
		-s | --socket)
			COMPREPLY=($(compgen -f -- "$cur"))
			return
			;;
		--sysfs-root)
			COMPREPLY=($(compgen -d -- "$cur"))
			return
			;;
		esac
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W '-s --socket --sysfs-root -J --json -h --help -V --version' -- "$cur"))
		else
			COMPREPLY=($(compgen -W "$commands" -- "$cur"))
		fi
		return
	fi

	case $cmd in
	online | offline)
		case $prev in
		-t | --timeout) return ;; # a number of ms: nothing to offer
		esac
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W '-t --timeout -p --persist -J --json -h --help' -- "$cur"))
			return
		fi
		# A range list: complete the number after the last ',' or '-'.
		local state=0 pre= cpus
		[[ $cmd == offline ]] && state=1
		[[ $cur == *[,-]* ]] && pre=${cur%"${cur##*[,-]}"}
		cpus=$(_cpuhpctl_cpus "$state" "$root")
		COMPREPLY=($(compgen -P "$pre" -W "$cpus" -- "${cur#"$pre"}"))
		;;
	watch)
		case $prev in
		-c | --count | -n) return ;;
		esac
		COMPREPLY=($(compgen -W '-c --count -J --json -h --help' -- "$cur"))
		;;
	hold | freeze)
		# CMD starts after '--', or at the first word that is not an option.
		local at=0
		for ((i = cmd_at + 1; i < COMP_CWORD; i++)); do
			case ${COMP_WORDS[i]} in
			-t | --timeout | -g | --grace | -w | --who | -y | --why) ((i++)) ;;
			--)
				at=$((i + 1))
				break
				;;
			-*) ;;
			*)
				at=$i
				break
				;;
			esac
		done
		if ((at && at < COMP_CWORD)); then # CMD's own arguments
			if declare -F _command_offset >/dev/null; then
				_command_offset "$at"
			else
				COMPREPLY=($(compgen -f -- "$cur"))
			fi
			return
		fi
		case $prev in
		-t | --timeout | -g | --grace | -w | --who | -y | --why) return ;;
		esac
		if ((!at)) && [[ $cur == -* ]]; then
			local opts='-w --who -y --why -h --help --'
			# freeze has neither a timeout nor --strict
			[[ $cmd == hold ]] && opts="-t --timeout -S --strict -g --grace $opts"
			COMPREPLY=($(compgen -W "$opts" -- "$cur"))
		else
			COMPREPLY=($(compgen -c -- "$cur"))
		fi
		;;
	status)
		COMPREPLY=($(compgen -W '-J --json -h --help' -- "$cur"))
		;;
	leases | states | cpus)
		if [[ $prev == -o || $prev == --output ]]; then
			# The columns --help lists, after the last ',' (and a leading '+').
			local cols pre=
			cols=$("${COMP_WORDS[0]}" "$cmd" --help 2>/dev/null |
				sed -n '/^Available output columns/,$s/^ *\([A-Z_]\+\)  .*/\1/p')
			[[ $cur == *,* || $cur == +* ]] && pre=${cur%"${cur##*[,+]}"}
			COMPREPLY=($(compgen -P "$pre" -W "$cols" -- "${cur#"$pre"}"))
			return
		fi
		COMPREPLY=($(compgen -W '-o --output -r --raw -n --noheadings -J --json -h --help' -- "$cur"))
		;;
	state)
		case $prev in
		-p | --priority | -d | --deadline | -T | --teardown | -t | -u | --startup) return ;;
		esac
		[[ $cur == -* ]] && COMPREPLY=($(compgen -W '-p --priority -d --deadline -N --nocalls
			-T --teardown -u --startup -h --help' -- "$cur"))
		;;
	smt)
		case $prev in
		-t | --timeout) return ;;
		esac
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W '-t --timeout -f --force -p --persist -J --json -h --help' -- "$cur"))
		else
			# forceoff only once --force is on the line: it cannot be undone.
			local words='on off' w
			for w in "${COMP_WORDS[@]:cmd_at+1}"; do
				[[ $w == -f || $w == --force ]] && words+=' forceoff'
			done
			COMPREPLY=($(compgen -W "$words" -- "$cur"))
		fi
		;;
	metrics)
		COMPREPLY=($(compgen -W '-h --help' -- "$cur"))
		;;
	plan)
		COMPREPLY=($(compgen -W '-J --json -h --help' -- "$cur"))
		;;
	new-cpu)
		case $prev in
		-t | --timeout) return ;;
		esac
		[[ $cur == -* ]] && COMPREPLY=($(compgen -W '-t --timeout -h --help' -- "$cur"))
		;;
	esac
}
complete -F _cpuhpctl cpuhpctl
