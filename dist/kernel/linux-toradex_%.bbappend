# SPDX-License-Identifier: MIT
# Example: the Flex's kernel (recipe linux-toradex) with pmetrics' kernel
# options. In the robot's OS build (Opentrons' oe-core) put this file and
# the fragment into the layer that already adds kernel fragments:
#   layers/meta-opentrons/recipes-kernel/linux/linux-toradex_%.bbappend
#   layers/meta-opentrons/recipes-kernel/linux/linux-toradex/pmetrics.cfg
# (or add file://pmetrics.cfg to the SRC_URI of the version-specific
# bbappend that is there, which lists the other .cfg files the same way).
# The kernel class merges every .cfg in SRC_URI into the defconfig with
# the kernel's scripts/kconfig/merge_config.sh, as
# tests/integration/test_kernel_fragment.sh does, and its config check
# step warns about a requested value that is not in the final .config.

FILESEXTRAPATHS:prepend := "${THISDIR}/${PN}:"
SRC_URI += "file://pmetrics.cfg"

# DEBUG_INFO_BTF: Kconfig asks pahole for its version and the build runs
# it on vmlinux. Without a pahole in the native sysroot, BTF is dropped
# from the config (PAHOLE_VERSION=0). The recipe is pahole, from
# meta-openembedded's meta-oe on kirkstone and scarthgap.
DEPENDS += "pahole-native"
