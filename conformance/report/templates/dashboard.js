(function(){
  var form=document.getElementById('filters'); form.hidden=false;
  var table=document.querySelector('.scroll table');
  var rows=[].slice.call(document.querySelectorAll('tbody tr.check'));
  var groups=[].slice.call(document.querySelectorAll('tbody tr.group'));
  var heads=[].slice.call(document.querySelectorAll('thead th.col'));
  var colgroups=[].slice.call(document.querySelectorAll('thead th.grp'));
  var shown=document.getElementById('shown');
  // The names row sticks just under the group row, whatever height the group row took.
  function stick(){
    var top=document.querySelector('thead tr.groups').getBoundingClientRect().height;
    document.querySelectorAll('thead tr.names > *').forEach(function(th){ th.style.top=top+'px'; });
    table.style.setProperty('--first-column',(document.querySelector('thead tr.names > .corner').getBoundingClientRect().width+6)+'px');
  }
  function checked(name){
    var on={}; form.querySelectorAll('input[name="'+name+'"]').forEach(function(i){ on[i.value]=i.checked; });
    return on;
  }
  function apply(){
    var want={}; [].forEach.call(form.elements,function(e){ if(e.name&&e.tagName==='SELECT') want[e.name]=e.value; });
    var q=form.elements.q.value.trim().toLowerCase(), roles=checked('role'), kinds=checked('kind');
    rows.forEach(function(tr){
      var ok=roles[tr.dataset.role]!==false&&['profile','level'].every(function(k){return !want[k]||tr.dataset[k]===want[k];});
      if(ok&&q){ ok=(tr.querySelector('code').textContent+' '+tr.dataset.profile).toLowerCase().indexOf(q)>=0; }
      if(ok&&want.outcome){ ok=tr.dataset.outcomes.split(' ').indexOf(want.outcome)>=0; }
      tr.hidden=!ok;
    });
    var visible=rows.filter(function(tr){return !tr.hidden;});
    // A column shows when its role(s) and kind are toggled on and a row left has a verdict of its role.
    var cols={};
    heads.forEach(function(th){
      var col=th.dataset.col;
      var on=kinds[th.dataset.kind]!==false&&th.dataset.roles.split(' + ').some(function(r){return roles[r]!==false;});
      if(on) on=visible.some(function(tr){ var c=tr.querySelector('td[data-col="'+col+'"]'); return c&&!c.classList.contains('na'); });
      cols[col]=on; th.hidden=!on;
    });
    table.querySelectorAll('td[data-col]').forEach(function(td){ td.hidden=!cols[td.dataset.col]; });
    var count=0; heads.forEach(function(th){ if(cols[th.dataset.col]) count++; });
    colgroups.forEach(function(th){
      var n=th.dataset.cols.split(' ').filter(function(c){return cols[c];}).length;
      th.hidden=!n; if(n) th.colSpan=n;
    });
    groups.forEach(function(g){
      g.hidden=!rows.some(function(tr){return !tr.hidden&&tr.dataset.profile===g.dataset.profile;});
      g.firstElementChild.colSpan=count+1;
    });
    stick();
    shown.textContent=visible.length+' of '+rows.length+' checks, '+count+' of '+heads.length+' implementations shown';
    document.querySelectorAll('tr.summary td').forEach(function(td){
      var col=td.dataset.col, n={};
      visible.forEach(function(tr){
        var c=tr.querySelector('td[data-col="'+col+'"]'); var o=c&&c.dataset.outcome;
        if(o) n[o]=(n[o]||0)+1; });
      td.querySelectorAll('[data-count]').forEach(function(s){
        var k=s.dataset.count; s.querySelector('b').textContent=n[k]||0; s.hidden=!n[k]; });
    });
  }
  form.addEventListener('change',apply); form.addEventListener('input',apply);
  form.addEventListener('submit',function(e){e.preventDefault();}); apply();
})();
