/**
 * gpumem emulated CUDA: entry points that UCM patches in place.
 *
 * UCX's memory hooks (UCM's cuda module) patch the first instructions of
 * libcuda's allocation and free calls (bistro mode): they copy those
 * instructions out and write a jump over them. UCM's x86-64 relocator
 * knows only a function's usual opening (push of a register, mov
 * %rsp,%rbp, sub $imm32,%rsp...), which NVIDIA's entry points have and
 * what a compiler makes of a C function need not (an imm8 sub, a load
 * relative to %rip): there UCM refuses every CUDA memory event.
 *
 * GPUMEM_EMU_CUDA_HOOKABLE(_symbol, _impl) makes the exported symbol
 * @a _symbol an opening UCM relocates (push %rbp; mov %rsp,%rbp; the
 * pushes of the callee-saved registers: 13 bytes, UCM overwrites 5 where
 * its code lies within 2 GiB of the symbol and 12 where not), undone at
 * once, and a jump to @a _impl, a hidden function of the same prototype
 * (GPUMEM_EMU_CUDA_HOOK_IMPL), which gets the caller's arguments and returns to the
 * caller. Elsewhere than x86-64 the symbol is an alias of @a _impl.
 *
 * See file LICENSE for terms.
 */

#ifndef GPUMEM_EMU_CUDA_HOOK_H_
#define GPUMEM_EMU_CUDA_HOOK_H_

#if defined(__x86_64__)
#  define GPUMEM_EMU_CUDA_HOOKABLE(_symbol, _impl) \
    __asm__(".text\n" \
            ".globl " #_symbol "\n" \
            ".type " #_symbol ", @function\n" \
            ".p2align 4\n" \
            #_symbol ":\n" \
            "    push %rbp\n" \
            "    mov %rsp, %rbp\n" \
            "    push %rbx\n" \
            "    push %r12\n" \
            "    push %r13\n" \
            "    push %r14\n" \
            "    push %r15\n" \
            "    pop %r15\n" \
            "    pop %r14\n" \
            "    pop %r13\n" \
            "    pop %r12\n" \
            "    pop %rbx\n" \
            "    pop %rbp\n" \
            "    jmp " #_impl "\n" \
            ".size " #_symbol ", . - " #_symbol "\n");
#else
#  define GPUMEM_EMU_CUDA_HOOKABLE(_symbol, _impl) \
    __asm__(".globl " #_symbol "\n" \
            ".set " #_symbol ", " #_impl "\n");
#endif

/* How a hookable entry point's implementation is declared: called only
 * from the jump, which the compiler does not see; global but hidden (and
 * local to the library by its version script), so that link-time
 * optimization, which may put the jump and the function in different
 * partitions, still links them */
#define GPUMEM_EMU_CUDA_HOOK_IMPL __attribute__((used, visibility("hidden")))

/* An entry point of cuda.h (@a _name, as the header spells it, which may
 * be a macro of the versioned @a _symbol), hookable, whose implementation
 * @a _impl has the header's prototype */
#define GPUMEM_EMU_CUDA_HOOKABLE_API(_name, _symbol, _impl) \
    _Static_assert(__builtin_types_compatible_p(__typeof__(_name), \
                                                __typeof__(_impl)), \
                   #_impl " has not the prototype of " #_name); \
    GPUMEM_EMU_CUDA_HOOKABLE(_symbol, _impl)

#endif
