/* SPDX-License-Identifier: MIT */ /* placeholder: not written yet */
