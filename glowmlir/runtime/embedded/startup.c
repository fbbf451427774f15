/* Reset handler for the QEMU MPS2 boards: FPU on (before any float instruction), .data copied, .bss zeroed, semihosting, constructors, then exit(main()) so the exit code reaches QEMU. */
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
extern uint32_t _estack, __data_load__, __data_start__, __data_end__, __bss_start__, __bss_end__;
extern int main(void);
extern void initialise_monitor_handles(void);   /* newlib librdimon */
extern void __libc_init_array(void);
void _init(void) {}   /* crti/crtn are not linked with -nostartfiles */
void _fini(void) {}
void Reset_Handler(void);
void Default_Handler(void) { for (;;) {} }
__attribute__((section(".isr_vector"), used))
const void *const vectors[16] = { &_estack, Reset_Handler, Default_Handler, Default_Handler,
    Default_Handler, Default_Handler, Default_Handler, 0, 0, 0, 0, Default_Handler, Default_Handler, 0,
    Default_Handler, Default_Handler };
__attribute__((noreturn)) void Reset_Handler(void) {
#if defined(__ARM_FP)
    *(volatile uint32_t *)0xE000ED88 |= 0xFu << 20;   /* CPACR: CP10, CP11 full access */
    __asm volatile("dsb\n isb" ::: "memory");
#endif
    memcpy(&__data_start__, &__data_load__, (size_t)((char *)&__data_end__ - (char *)&__data_start__));
    memset(&__bss_start__, 0, (size_t)((char *)&__bss_end__ - (char *)&__bss_start__));
    initialise_monitor_handles();
    __libc_init_array();
    exit(main());
}
