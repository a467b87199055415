/**
 * Keyboard handling shared by the app's pop-up menus (`role="menu"` with `role="menuitem"` items):
 * arrows move between items, Escape closes and gives focus back to the button, Tab closes and
 * lets focus move on — the WAI-ARIA menu button pattern.
 */
export function menuItems(menu: HTMLElement | undefined): HTMLElement[] {
  return Array.from(menu?.querySelectorAll<HTMLElement>('[role="menuitem"]') ?? []);
}

export function menuKeydown(e: KeyboardEvent, menu: HTMLElement | undefined, close: (focusButton: boolean) => void): void {
  const items = menuItems(menu);
  const i = items.indexOf(document.activeElement as HTMLElement);
  if (e.key === 'ArrowDown') {
    e.preventDefault();
    items[(i + 1) % items.length]?.focus();
  } else if (e.key === 'ArrowUp') {
    e.preventDefault();
    items[(i - 1 + items.length) % items.length]?.focus();
  } else if (e.key === 'Escape') {
    e.preventDefault();
    e.stopPropagation();
    close(true);
  } else if (e.key === 'Tab') {
    close(false);
  }
}

/** A click outside both the menu and its button closes the menu (focus stays where the click put it). */
export function clickedOutside(e: MouseEvent, menu: HTMLElement | undefined, button: HTMLElement | undefined): boolean {
  const t = e.target as Node;
  return !(menu?.contains(t) || button?.contains(t));
}
